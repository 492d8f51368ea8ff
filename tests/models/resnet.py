#!/usr/bin/python3
"""A ResNet-50-like CNN as a test and benchmark model (the issue's CNN target), written out in plain PyTorch
(Debian has no torchvision): a 7x7/2 stem, 3x3/2 max pool, bottleneck stages of 3, 4, 6 and 3 blocks (1x1
reduce, 3x3 with the stage's stride, 1x1 expand x4, projection shortcut where the shape changes), global
average pool and a 1000-way linear layer. Follows torchvision's resnet50 layout without depending on it.
torch's exporter folds eval-mode BatchNorm into the convs, so the tiny model has BatchNorm (drawn statistics,
folded by the exporter) and the large one convs with biases instead: its conv weights must reach the ONNX file
as the module holds them, for the weight recipe below to find them.

    /usr/bin/python3 tests/models/resnet.py           # tiny: tests/data/models/resnet_tiny_opset17 (CI)
    /usr/bin/python3 tests/models/resnet.py --large   # ResNet-50 at 224x224 -> build/models-large/resnet50_opset17

The large model keeps its weights in model.onnx.data with a weights.json recipe (florence_siglip.py's
machinery; fill_weights.py rebuilds the file anywhere). References are the module in float64.
"""
import os
import sys

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import florence_siglip  # noqa: E402  (export, reference and weight-recipe helpers)

SEED = 20261130


def conv_norm(in_channels, out_channels, kernel, stride, batch_norm):
    """A conv and its BatchNorm, or (batch_norm off) a conv with a bias and an identity."""
    conv = nn.Conv2d(in_channels, out_channels, kernel, stride=stride, padding=kernel // 2, bias=not batch_norm)
    return conv, nn.BatchNorm2d(out_channels) if batch_norm else nn.Identity()


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_channels, width, stride, batch_norm):
        super().__init__()
        out_channels = width * self.expansion
        self.conv1, self.bn1 = conv_norm(in_channels, width, 1, 1, batch_norm)
        self.conv2, self.bn2 = conv_norm(width, width, 3, stride, batch_norm)
        self.conv3, self.bn3 = conv_norm(width, out_channels, 1, 1, batch_norm)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = None
        if stride != 1 or in_channels != out_channels:
            self.downsample = nn.Sequential(*conv_norm(in_channels, out_channels, 1, stride, batch_norm))

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, blocks, base_width, classes, batch_norm):
        super().__init__()
        self.conv1, self.bn1 = conv_norm(3, base_width, 7, 2, batch_norm)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        layers, channels = [], base_width
        for stage, count in enumerate(blocks):
            width = base_width * 2 ** stage
            stage_blocks = []
            for b in range(count):
                stage_blocks.append(Bottleneck(channels, width, 2 if b == 0 and stage > 0 else 1, batch_norm))
                channels = width * Bottleneck.expansion
            layers.append(nn.Sequential(*stage_blocks))
        self.layer1, self.layer2, self.layer3, self.layer4 = layers
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(channels, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def resnet(tiny):
    """ResNet-50 (25.6M parameters), or a tiny one for CI (150 KB): one block per stage, 4 base channels, 10
    classes."""
    return ResNet([1, 1, 1, 1], 4, 10, batch_norm=True) if tiny else ResNet([3, 4, 6, 3], 64, 1000, False)


def randomize_batch_norms(module, gen):
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.BatchNorm2d):
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_(torch.rand(m.bias.shape, generator=gen) - 0.5)
                m.running_mean.copy_(torch.rand(m.running_mean.shape, generator=gen) * 0.2 - 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=gen) + 0.5)


def case(tiny):
    gen = torch.Generator().manual_seed(SEED)
    torch.manual_seed(SEED)
    module = resnet(tiny).eval()
    randomize_batch_norms(module, gen)
    rng = np.random.default_rng(SEED)
    size = 32 if tiny else 224
    x = rng.uniform(-1, 1, (2 if tiny else 1, 3, size, size)).astype(np.float32)
    return florence_siglip.ModelCase("resnet_tiny" if tiny else "resnet50", module, [x], ["image"], ["logits"],
                                     {"image": {0: "batch"}, "logits": {0: "batch"}})


def main(argv):
    if "--large" in argv:
        import fill_weights
        c = case(tiny=False)
        recipe = florence_siglip.generate_large_parameters(c.module, SEED)
        c.write(florence_siglip.OUT_LARGE, (17,))
        folder = os.path.join(florence_siglip.OUT_LARGE, "resnet50_opset17")
        florence_siglip.externalize_weights(folder, recipe)
        fill_weights.fill_folder(folder, check_only=True)  # the recipe reproduces the data file
    else:
        case(tiny=True).write(florence_siglip.OUT, (17,))


if __name__ == "__main__":
    main(sys.argv[1:])
