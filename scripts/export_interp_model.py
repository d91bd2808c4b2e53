#!/usr/bin/python3
"""Exports a small segmentation-style head whose upsampling is interpolated, as PyTorch users
write it: Conv -> F.interpolate(scale_factor=2, bilinear) -> F.interpolate(size=..., bicubic,
align_corners=True) -> Conv -> F.interpolate(scale_factor=0.5, bilinear), with torch's
initialised weights inline (Debian's python3-torch 1.13). torch exports these as Resize in
linear and cubic modes under half_pixel and align_corners: the runtime's Resize kernels are
held to onnxruntime and onnx.reference on it (tests/codegen/ort_compare_test.sh).

usage: scripts/export_interp_model.py OUT.onnx [OPSET]
"""
import sys

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError as e:  # the caller turns this into a visible skip
    print(f"SKIPPED: export_interp_model: {e}")
    sys.exit(77)


class Interp(nn.Module):
    def __init__(self):
        super().__init__()
        self.encode = nn.Conv2d(4, 6, 3, padding=1)
        self.decode = nn.Conv2d(6, 3, 1)

    def forward(self, x):
        h = F.interpolate(self.encode(x), scale_factor=2, mode="bilinear", align_corners=False)
        h = F.interpolate(h, size=(13, 21), mode="bicubic", align_corners=True)
        return F.interpolate(self.decode(h), scale_factor=0.5, mode="bilinear",
                             align_corners=False)


def main():
    if len(sys.argv) not in (2, 3):
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    torch.manual_seed(0)
    model = Interp().eval()
    opset = int(sys.argv[2]) if len(sys.argv) == 3 else 13
    with torch.no_grad():
        torch.onnx.export(model, (torch.randn(2, 4, 9, 11),), sys.argv[1], input_names=["input"],
                          output_names=["output"], opset_version=opset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
