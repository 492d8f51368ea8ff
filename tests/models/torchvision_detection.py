#!/usr/bin/python3
"""A torchvision detector with seeded weights at a tiny input, for tests/gpu/test_dynamic_shapes.cpp:

    /usr/bin/python3 tests/models/torchvision_detection.py

torchvision 0.14's ssdlite320_mobilenet_v3_large (weights=None, weights_backbone=None: seeded random
weights (see below); backbone width 0.5; 3 classes, so the per-class post-processing is unrolled twice), at a 160 x 160 image, exported with
torch.onnx at opset 17. Its post-processing has what docs/dynamic_shapes.md is about: NonZero (scores above
the threshold), TopK with K = min(count, 300) from the shape of that data-dependent result, and
NonMaxSuppression (batched by the coordinate trick), then Gathers of the kept detections.

One change to torchvision for the export: _batched_nms_coordinate_trick is scripted when traced, which puts
its `if boxes.numel() == 0: return empty` around the NonMaxSuppression as an ONNX If, and wgi splits a run
only between top-level nodes (a data-dependent node inside an If branch is refused). The function is
replaced by the same code without the early return (NonMaxSuppression of no boxes selects none, so the
result is the same).

Writes tests/data/models/torchvision_detection/ssdlite_tiny.onnx and image.npy (seeded, [3, 160, 160]).
"""
import os

import numpy as np
import torch
import torchvision
from torchvision.ops import boxes as box_ops

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "models", "torchvision_detection")
SEED = 20261201


def batched_nms_without_early_return(boxes, scores, idxs, iou_threshold):
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    boxes_for_nms = boxes + offsets[:, None]
    return box_ops.nms(boxes_for_nms, scores, iou_threshold)


def main():
    os.makedirs(OUT, exist_ok=True)
    box_ops._batched_nms_coordinate_trick = batched_nms_without_early_return
    torch.manual_seed(SEED)
    model = torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None,
                                                                       num_classes=3, width_mult=0.5)
    # Seeded weights that keep activations alive: torchvision initialises convolutions with fan_out scaling,
    # which for the depthwise ones shrinks the activations layer by layer until the features are constant over
    # the image and many scores tie exactly (the detections then depend on how TopK and NonMaxSuppression
    # break ties); fan_in scaling, and heads of a wider spread than their near-zero start, give distinct
    # scores (285 of 285 here).
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Conv2d):
                torch.nn.init.kaiming_normal_(m.weight, mode="fan_in", nonlinearity="relu")
        for p in model.head.parameters():
            p.normal_(0.0, 0.05)
    model.eval()
    image = torch.rand(3, 160, 160, generator=torch.Generator().manual_seed(SEED))
    with torch.no_grad():
        model([image])
    torch.onnx.export(model, ([image],), os.path.join(OUT, "ssdlite_tiny.onnx"), opset_version=17,
                      input_names=["image"], output_names=["boxes", "scores", "labels"])
    np.save(os.path.join(OUT, "image.npy"), image.numpy())


if __name__ == "__main__":
    main()
