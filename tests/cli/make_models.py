#!/usr/bin/env python3
"""Writes the small hostile or unusual ONNX models and .npy files that tests/cli/cli_test.sh feeds `wgi`.

No onnx or numpy package: the protobuf wire format and the .npy layout are written here by hand, from the
ONNX schema (onnx.proto field numbers) and numpy's format specification. Usage: make_models.py DIR
"""
import os
import struct
import sys

FLOAT, INT64, FLOAT16 = 1, 7, 10


def varint(v):
    if v < 0:  # int64 fields: two's complement, ten bytes
        v += 1 << 64
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def field_varint(number, v):
    return varint(number << 3) + varint(v)


def field_bytes(number, data):
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    return varint((number << 3) | 2) + varint(len(data)) + data


def value_info(name, elem_type, dims):
    """dims: None (no shape at all), or a list of ints and strings (dim_value / dim_param)."""
    tensor = field_varint(1, elem_type)
    if dims is not None:
        shape = b""
        for d in dims:
            shape += field_bytes(1, field_varint(1, d) if isinstance(d, int) else field_bytes(2, d))
        tensor += field_bytes(2, shape)
    return field_bytes(1, name) + field_bytes(2, field_bytes(1, tensor))


def node(op_type, inputs, outputs, name="", attributes=b""):
    out = b"".join(field_bytes(1, i) for i in inputs) + b"".join(field_bytes(2, o) for o in outputs)
    return out + field_bytes(3, name or op_type + "_" + outputs[0]) + field_bytes(4, op_type) + attributes


def int_attribute(name, v):
    return field_bytes(5, field_bytes(1, name) + field_varint(3, v) + field_varint(20, 2))


def tensor(name, data_type, dims, raw):
    return b"".join(field_varint(1, d) for d in dims) + field_varint(2, data_type) + field_bytes(8, name) + \
        field_bytes(9, raw)


def model(nodes, inputs, outputs, initializers=(), opset=13):
    graph = b"".join(field_bytes(1, n) for n in nodes) + field_bytes(2, "g")
    graph += b"".join(field_bytes(5, t) for t in initializers)
    graph += b"".join(field_bytes(11, i) for i in inputs) + b"".join(field_bytes(12, o) for o in outputs)
    return field_varint(1, 8) + field_bytes(8, field_bytes(1, "") + field_varint(2, opset)) + field_bytes(7, graph)


def npy(header_dict, data=b""):
    header = header_dict
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


def main(out):
    os.makedirs(out, exist_ok=True)

    def write(name, data):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)

    x23 = value_info("x", FLOAT, [2, 3])
    # Two outputs whose sanitised file names are the same (a_b.npy).
    write("collide.onnx", model([node("Relu", ["x"], ["a/b"]), node("Neg", ["x"], ["a_b"])], [x23],
                                [value_info("a/b", FLOAT, None), value_info("a_b", FLOAT, None)]))
    # x [n] -> Relu: no planner limit of its own, so only the buffer limits refuse a huge n.
    write("relu_n.onnx", model([node("Relu", ["x"], ["y"])], [value_info("x", FLOAT, ["n"])],
                               [value_info("y", FLOAT, None)]))
    # An input without any declared shape.
    write("rankless.onnx", model([node("Relu", ["x"], ["y"])], [value_info("x", FLOAT, None)],
                                 [value_info("y", FLOAT, None)]))
    # A float16 input, cast to float32 so that the output shows the values --random-inputs gave it.
    write("f16_input.onnx", model([node("Cast", ["x"], ["y"], attributes=int_attribute("to", FLOAT))],
                                  [value_info("x", FLOAT16, [3, 5])], [value_info("y", FLOAT, None)]))
    # ConstantOfShape of 2^28 floats (1 GiB): more than WebGPU's default maxBufferSize.
    write("big_constant.onnx", model([node("ConstantOfShape", ["shape"], ["big"]), node("Relu", ["big"], ["y"])],
                                     [], [value_info("y", FLOAT, None)],
                                     [tensor("shape", INT64, [1], struct.pack("<q", 1 << 28))], opset=13))
    # A symbolic dim, a second one, an unnamed unknown one and a negative declared one.
    write("dims.onnx", model([node("Add", ["a", "b"], ["y"])],
                             [value_info("a", FLOAT, ["batch", "seq"]),
                              value_info("b", FLOAT, ["batch", -1])], [value_info("y", FLOAT, None)]))
    # One Sum of 5000 inputs: past the importer's fan-in cap.
    write("wide_sum.onnx", model([node("Sum", ["x"] * 5000, ["y"], name="wide")], [x23], [value_info("y", FLOAT, None)]))
    # Names that would drive a terminal: an ESC sequence in a node name and an unknown op type.
    write("escape_names.onnx", model([node("Frob\x1b[2J", ["x"], ["y"], name="evil\x1b]0;title\x07")], [x23],
                                     [value_info("y", FLOAT, None)]))

    header = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }"
    write("x_cut.npy", npy("{'descr':"))
    write("x_huge_dim.npy", npy(header % "(99999999999999999999999, 3)"))
    write("x_negative.npy", npy(header % "(-2, 3)", b"\0" * 24))
    write("x_junk.npy", npy(header % "(2a3)", b"\0" * 24))
    write("x_overflow.npy", npy(header % "(4611686018427387904,)", b"\0" * 64))
    write("x_ok.npy", npy(header % "(2, 3)", struct.pack("<6f", 0.5, -1, 2, -3, 4, -5)))


if __name__ == "__main__":
    main(sys.argv[1])
