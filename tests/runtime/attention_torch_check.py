#!/usr/bin/env python3
"""The runtime's ai.planner.Attention and AttentionGrad against PyTorch.

Runs the attention test program's dump case (PLANNER_ATTENTION_TORCH_DUMP=FILE), which writes
each case's f32 inputs (Q, K, V, the optional Mask, W) and the kernels' outputs (Y, LSE and, for
dY = W, dQ, dK, dV), then recomputes every case in float64 with torch: attention through
torch.nn.functional.scaled_dot_product_attention where this torch has it (2.1 and later take
`scale`) and the case has no row without keys, else as softmax(scale Q K^T + bias) V written
out; LSE as torch.logsumexp of the scores; the gradients of sum(Y * W) by autograd. Rows
without an attended key are Y = 0, LSE = -inf and no gradient (the runtime's contract; torch's
softmax would give NaN there). Exits 77 (ctest: skipped) where torch cannot be imported.

    attention_torch_check.py TEST_PROGRAM WORK_DIR
"""
import math
import os
import subprocess
import sys

RTOL, ATOL = 1e-5, 1e-6  # f32 outputs against a float64 reference


def parse(path):
    cases, case = [], None
    with open(path) as f:
        for line in f:
            words = line.split()
            if not words:
                continue
            if words[0] == "case":
                case = {"name": words[1], "tensors": {}}
            elif words[0] == "attrs":
                case["scale"] = float(words[1])
                case["causal"] = words[2] != "0"
                case["query_offset"], case["key_offset"] = int(words[3]), int(words[4])
            elif words[0] == "lead":
                case["lead"] = [int(w) for w in words[2:2 + int(words[1])]]
            elif words[0] == "dims":
                case["dims"] = [int(w) for w in words[1:5]]
            elif words[0] == "tensor":
                values = [float(w) for w in words[3:]]
                if len(values) != int(words[2]):
                    raise ValueError(f"{case['name']}: tensor {words[1]}: {len(values)} values, "
                                     f"expected {words[2]}")
                case["tensors"][words[1]] = values
            elif words[0] == "end":
                cases.append(case)
    return cases


def reference(torch, c):
    """Y, LSE, dQ, dK, dV of case c in float64, and how Y was computed."""
    F = torch.nn.functional
    lead, (S, T, D, E) = c["lead"], c["dims"]
    tensors = c["tensors"]

    def t(name, shape):
        return torch.tensor(tensors[name], dtype=torch.float64).reshape(shape)

    q = t("Q", lead + [S, D]).requires_grad_()
    k = t("K", lead + [T, D]).requires_grad_()
    v = t("V", lead + [T, E]).requires_grad_()
    w = t("W", lead + [S, E])
    bias = t("Mask", [S, T]) if "Mask" in tensors else torch.zeros(S, T, dtype=torch.float64)
    if c["causal"]:
        query = torch.arange(S).reshape(S, 1) + c["query_offset"]
        key = torch.arange(T).reshape(1, T) + c["key_offset"]
        bias = bias.masked_fill(key > query, -math.inf)
    scores = torch.matmul(q, k.transpose(-1, -2)) * c["scale"] + bias
    lse = torch.logsumexp(scores.detach(), dim=-1)
    no_keys = bool(torch.isneginf(scores.detach()).all(-1).any())
    y, how = None, "softmax written out"
    sdpa = getattr(F, "scaled_dot_product_attention", None)
    if sdpa is not None and not no_keys:
        try:
            plain_causal = (c["causal"] and "Mask" not in tensors and c["query_offset"] == 0
                            and c["key_offset"] == 0)
            if plain_causal:  # torch's own causal rule (top-left aligned), not the bias
                y = sdpa(q, k, v, is_causal=True, scale=c["scale"])
            else:
                y = sdpa(q, k, v, attn_mask=bias, scale=c["scale"])
            how = "scaled_dot_product_attention"
        except TypeError:  # torch 2.0: no `scale`
            y = None
    if y is None:
        m = scores.detach().amax(-1, keepdim=True)
        m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        e = torch.exp(scores - m)
        total = e.sum(-1, keepdim=True)
        y = torch.matmul(e / torch.where(total > 0, total, torch.ones_like(total)), v)
    (y * w).sum().backward()
    return {"Y": y.detach(), "LSE": lse, "dQ": q.grad, "dK": k.grad, "dV": v.grad}, how


def compare(torch, name, got, want):
    """The worst |got - want| / (ATOL + RTOL |want|); -inf must match -inf."""
    got = torch.tensor(got, dtype=torch.float64)
    want = want.reshape(-1)
    inf = torch.isinf(want) | torch.isinf(got)
    if not torch.equal(got[inf], want[inf]):
        return math.inf, f"{name}: infinities differ"
    if torch.isnan(got).any():
        return math.inf, f"{name}: NaN"
    err = (got[~inf] - want[~inf]).abs() / (ATOL + RTOL * want[~inf].abs())
    worst = float(err.max()) if err.numel() else 0.0
    return worst, f"{name} {worst:.3f}"


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    program, work = sys.argv[1], sys.argv[2]
    try:
        import torch
    except ImportError as e:
        print(f"SKIPPED: {sys.executable} cannot import torch: {e}")
        return 77
    os.makedirs(work, exist_ok=True)
    dump = os.path.join(work, "attention_cases.txt")
    if os.path.exists(dump):
        os.remove(dump)
    env = dict(os.environ, PLANNER_ATTENTION_TORCH_DUMP=dump)
    run = subprocess.run([program, "--test-case=*PyTorch*"], env=env, capture_output=True,
                         text=True)
    if run.returncode != 0 or not os.path.exists(dump):
        print(run.stdout + run.stderr)
        print(f"FAIL: {program} did not write {dump}")
        return 1
    cases = parse(dump)
    if not cases:
        print(f"FAIL: no cases in {dump}")
        return 1
    print(f"torch {torch.__version__}; error in units of atol {ATOL} + rtol {RTOL} |torch|")
    failures = 0
    for c in cases:
        want, how = reference(torch, c)
        notes = []
        bad = False
        for name in ("Y", "LSE", "dQ", "dK", "dV"):
            worst, note = compare(torch, name, c["tensors"][name], want[name])
            notes.append(note)
            bad |= not worst <= 1.0
        failures += bad
        print(f"{'FAIL' if bad else 'ok  '} {c['name']:<22} ({how}): {', '.join(notes)}")
    print(f"attention_torch_check: {len(cases)} cases, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
