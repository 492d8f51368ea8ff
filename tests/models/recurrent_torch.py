"""Writes tests/data/recurrent/: a small torch.nn model with a 2-layer bidirectional nn.LSTM (batch_first), an
nn.GRU and an nn.RNN (relu), exported to ONNX (opset 14) by PyTorch's exporter, and seeded inputs for it. The test
(tests/gpu/test_recurrent.cpp, RecurrentTorchExport) compares wgi with onnxruntime's CPU provider on it.

Run with Debian's torch: /usr/bin/python3 tests/models/recurrent_torch.py
"""
import os

import numpy as np
import torch

OUT = os.path.join(os.path.dirname(__file__), "..", "data", "recurrent")


class LstmGru(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = torch.nn.LSTM(input_size=5, hidden_size=12, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = torch.nn.GRU(input_size=24, hidden_size=7)
        self.rnn = torch.nn.RNN(input_size=7, hidden_size=6, nonlinearity="relu")
        self.head = torch.nn.Linear(6, 3)

    def forward(self, x, h0, c0):
        y, (h, c) = self.lstm(x, (h0, c0))
        z, hg = self.gru(y.transpose(0, 1))  # sequence-first, initial state zero
        v, hr = self.rnn(z)
        return self.head(v), h, c, hg, hr


def main():
    torch.manual_seed(7)
    model = LstmGru().eval()
    batch, seq = 3, 9
    x = torch.randn(batch, seq, 5)
    h0 = torch.randn(4, batch, 12) * 0.5
    c0 = torch.randn(4, batch, 12) * 0.5
    os.makedirs(OUT, exist_ok=True)
    torch.onnx.export(model, (x, h0, c0), os.path.join(OUT, "lstm_gru_rnn_opset14.onnx"), opset_version=14,
                      input_names=["x", "h0", "c0"], output_names=["logits", "h", "c", "gru_h", "rnn_h"],
                      dynamic_axes={"x": {0: "batch", 1: "seq"}, "h0": {1: "batch"}, "c0": {1: "batch"}})
    for name, t in [("x", x), ("h0", h0), ("c0", c0)]:
        np.save(os.path.join(OUT, "input_" + name + ".npy"), t.numpy().astype(np.float32))


if __name__ == "__main__":
    main()
