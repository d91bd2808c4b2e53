#!/usr/bin/python3
"""Exports a corpus of today's model families as graph-only ONNX files, to see what the
planner imports and plans.

Eight architectures, each written below from its paper with Debian's python3-torch (1.13);
nothing is downloaded: a Llama-style decoder, a mixture-of-experts transformer, T5,
ConvNeXt-T, MobileNetV3-Large, Swin-T, a diffusion UNet and ViT-B/16. Widths are the papers';
depths that are plain repeats are cut (each class says where). Each is exported twice: NAME.onnx
in eval mode (TrainingMode.EVAL) and NAME_train.onnx in training mode
(TrainingMode.TRAINING, do_constant_folding=False, Dropout and batch statistics kept), with a
symbolic batch dimension ("batch") on axis 0 of every input, at opset 17 (13 for convnext and
unet, 15 for mobilenet_v3). Floating-point initializers are external-data references to a
file that is never written (the planner never reads weights); integer constants stay inline.

OUT_DIR/corpus.json lists each file with the --batch to plan it with (eight GPUs' batch) and a
--shrink map (docs/models.md) that lets a CPU verify it in seconds.

--weights exports small-width variants instead (NAME_small.onnx, NAME_small_train.onnx), batch
fixed to 2, with their torch-initialised weights inline, to compare the planner's cpu runtime
with onnxruntime.

usage: scripts/export_corpus.py [--weights] OUT_DIR [NAME ...]
"""
import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import graph_only  # noqa: E402  (the shared helpers next to this script)

try:
    import onnx
    import torch
    from torch import nn
    from torch.nn import functional as F
except ImportError as e:  # the caller turns this into a visible skip
    print(f"export_corpus: {e}", file=sys.stderr)
    sys.exit(77)

NEG = torch.finfo(torch.float32).min  # the additive mask value for positions never attended to

# Notes common to the transformers below. Every reshape that splits or merges heads gets a
# shape of Python integers with -1 for the batch, so it is a constant that --shrink rewrites;
# sequence positions come from the input's shape (Range), so tables computed from them shrink
# with it. Dropout(0.1) sits where each paper (or its reference code) puts it; where the
# paper trains without it (Llama) it is added so the training export has Dropout.


def heads_attention(q, k, v, bias, drop, scale):
    """Scaled dot products of [B, H, Sq, D] queries with [B, H, Sk, D] keys; `bias` (or None)
    is added to the scores before the softmax; returns [B, H, Sq, D]."""
    scores = torch.matmul(q, k.transpose(-2, -1))
    if scale != 1.0:
        scores = scores * scale
    if bias is not None:
        scores = scores + bias
    return torch.matmul(drop(scores.softmax(-1)), v)


def causal_bias(seq_of):
    """An additive [S, S] mask, 0 on and below the diagonal and NEG above, built from the
    positions of `seq_of`'s axis 1 (so it follows the sequence length, shrunk or not)."""
    pos = torch.arange(seq_of.shape[1], device=seq_of.device)
    future = pos.unsqueeze(0) > pos.unsqueeze(1)
    return torch.zeros(future.shape, device=seq_of.device).masked_fill(future, NEG)


# --- 1. Llama --------------------------------------------------------------------------------

class RMSNorm(nn.Module):
    """Root-mean-square normalisation (Zhang and Sennrich 2019), as Llama and T5 use it: no mean
    subtracted, no bias, a learned gain."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LlamaBlock(nn.Module):
    """One Llama decoder layer (Touvron et al. 2023, "LLaMA"): pre-RMSNorm, causal attention
    with rotary embeddings (Su et al. 2021) and grouped-query key/value heads (Ainslie et al.
    2023, as Llama 2 uses them), then a SwiGLU MLP (Shazeer 2020). No biases."""

    def __init__(self, d, heads, kv_heads, ffn, seq, p):
        super().__init__()
        self.heads, self.kv_heads, self.hd, self.seq = heads, kv_heads, d // heads, seq
        self.attn_norm, self.mlp_norm = RMSNorm(d), RMSNorm(d)
        self.wq = nn.Linear(d, d, bias=False)
        self.wk = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(d, d, bias=False)
        self.w_gate = nn.Linear(d, ffn, bias=False)
        self.w_up = nn.Linear(d, ffn, bias=False)
        self.w_down = nn.Linear(ffn, d, bias=False)
        self.drop = nn.Dropout(p)

    def rotate(self, x, cos, sin):
        # Rotate-half form: the first and second halves of each head form the pairs rotated.
        lo, hi = torch.split(x, [self.hd // 2, self.hd // 2], -1)
        return x * cos + torch.cat([-hi, lo], -1) * sin

    def repeat_kv(self, x):
        # [B, S, KV, D] -> [B, S, H, D]: each key/value head serves heads / kv_heads queries.
        rep = self.heads // self.kv_heads
        b, s, kv, hd = x.shape
        x = x.unsqueeze(3).expand(b, s, kv, rep, hd)
        return x.reshape(-1, self.seq, self.heads, self.hd)

    def forward(self, x, cos, sin, mask):
        s, h, kv, hd = self.seq, self.heads, self.kv_heads, self.hd
        a = self.attn_norm(x)
        q = self.rotate(self.wq(a).reshape(-1, s, h, hd), cos, sin)
        k = self.rotate(self.wk(a).reshape(-1, s, kv, hd), cos, sin)
        v = self.wv(a).reshape(-1, s, kv, hd)
        q, k, v = (t.transpose(1, 2) for t in (q, self.repeat_kv(k), self.repeat_kv(v)))
        o = heads_attention(q, k, v, mask, self.drop, 1.0 / math.sqrt(hd))
        x = x + self.drop(self.wo(o.transpose(1, 2).reshape(-1, s, h * hd)))
        m = self.mlp_norm(x)
        return x + self.drop(self.w_down(F.silu(self.w_gate(m)) * self.w_up(m)))


class Llama(nn.Module):
    """Llama-style decoder: token embedding, `layers` blocks (the paper's 7B has 32 identical
    ones; fewer here), final RMSNorm and an untied LM head."""

    def __init__(self, d, heads, kv_heads, ffn, vocab, seq, layers, p=0.1):
        super().__init__()
        self.hd = d // heads
        self.embed = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaBlock(d, heads, kv_heads, ffn, seq, p)
                                    for _ in range(layers))
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids):
        # Rotary tables: angle = position * 10000^(-2i/D), the same for both halves.
        pos = torch.arange(input_ids.shape[1], device=input_ids.device).float()
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        angles = pos.unsqueeze(1) * inv_freq.unsqueeze(0)
        angles = torch.cat([angles, angles], -1).unsqueeze(1)  # [S, 1, D]
        cos, sin = angles.cos(), angles.sin()
        mask = causal_bias(input_ids)
        x = self.embed(input_ids)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.head(self.norm(x))


# --- 2. Mixture of experts -------------------------------------------------------------------

class SelfAttention(nn.Module):
    """Multi-head self-attention with one fused QKV projection (Vaswani et al. 2017)."""

    def __init__(self, d, heads, seq, p, bias=True):
        super().__init__()
        self.heads, self.hd, self.seq = heads, d // heads, seq
        self.qkv = nn.Linear(d, 3 * d, bias=bias)
        self.out = nn.Linear(d, d, bias=bias)
        self.drop = nn.Dropout(p)

    def forward(self, x, bias=None):
        s, h, hd = self.seq, self.heads, self.hd
        q, k, v = self.qkv(x).reshape(-1, s, 3, h, hd).permute(2, 0, 3, 1, 4).unbind(0)
        o = heads_attention(q, k, v, bias, self.drop, 1.0 / math.sqrt(hd))
        return self.out(o.transpose(1, 2).reshape(-1, s, h * hd))


class Top2Experts(nn.Module):
    """GShard's top-2 gating (Lepikhin et al. 2020) over `experts` ReLU FFNs as Switch
    Transformers (Fedus et al. 2021) build them, with static shapes: each sequence is one
    routing group of S tokens, each expert takes at most C = ceil(2 S / E x 1.25) of them
    (first choices before second choices, in token order, the rest dropped), and dispatch and
    combine are dense [B, S, E, C] tensors used in matrix products, never index lists."""

    def __init__(self, d, ffn, experts, seq, p, capacity_factor=1.25):
        super().__init__()
        self.experts, self.d = experts, d
        self.capacity = math.ceil(2 * seq * capacity_factor / experts)
        self.router = nn.Linear(d, experts, bias=False)
        self.w_in = nn.Parameter(torch.randn(experts, d, ffn) * d ** -0.5)
        self.w_out = nn.Parameter(torch.randn(experts, ffn, d) * ffn ** -0.5)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        e, c = self.experts, self.capacity
        probs = self.router(x).softmax(-1)                       # [B, S, E]
        gate, choice = probs.topk(2, -1)                         # [B, S, 2]
        gate = gate / gate.sum(-1, keepdim=True)
        onehot = (choice.unsqueeze(-1) == torch.arange(e)).float()   # [B, S, 2, E]
        first, second = onehot.unbind(2)
        # A token's slot in an expert's buffer: how many tokens chose it before, second
        # choices counted after every first choice.
        slot1 = first.cumsum(1) - 1
        slot2 = second.cumsum(1) - 1 + first.sum(1, keepdim=True)
        slots = torch.arange(c).float()                          # a slot past C matches none
        at1 = ((slot1 * first).sum(-1).unsqueeze(-1) == slots).float()   # [B, S, C]
        at2 = ((slot2 * second).sum(-1).unsqueeze(-1) == slots).float()
        route1 = first.unsqueeze(-1) * at1.unsqueeze(2)          # [B, S, E, C]
        route2 = second.unsqueeze(-1) * at2.unsqueeze(2)
        dispatch = route1 + route2
        combine = gate[..., 0, None, None] * route1 + gate[..., 1, None, None] * route2
        # [B, E, C, S] x [B, 1, S, d] -> each expert's buffer, then [E, B*C, d] for the FFNs.
        buf = torch.matmul(dispatch.permute(0, 2, 3, 1), x.unsqueeze(1))
        buf = buf.transpose(0, 1).reshape(e, -1, self.d)
        y = torch.bmm(self.drop(F.relu(torch.bmm(buf, self.w_in))), self.w_out)
        y = y.reshape(e, -1, c, self.d).transpose(0, 1)          # [B, E, C, d]
        # [B, E, S, C] x [B, E, C, d], summed over the experts.
        return torch.matmul(combine.permute(0, 2, 1, 3), y).sum(1)


class MoETransformer(nn.Module):
    """A Switch-style encoder (Fedus et al. 2021): token and learned position embeddings,
    pre-LN layers of self-attention and a top-2 mixture of experts in place of every FFN
    (Switch alternates dense and expert layers; with two layers both are expert layers here),
    a final LayerNorm and a language-model head."""

    def __init__(self, d, heads, ffn, experts, vocab, seq, layers, p=0.1):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.position = nn.Parameter(torch.randn(seq, d) * 0.02)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList(nn.ModuleDict({
            "norm1": nn.LayerNorm(d), "attn": SelfAttention(d, heads, seq, p),
            "norm2": nn.LayerNorm(d), "moe": Top2Experts(d, ffn, experts, seq, p)})
            for _ in range(layers))
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids):
        x = self.drop(self.embed(input_ids) + self.position)
        for b in self.blocks:
            x = x + self.drop(b["attn"](b["norm1"](x)))
            x = x + self.drop(b["moe"](b["norm2"](x)))
        return self.head(self.norm(x))


# --- 3. T5 -----------------------------------------------------------------------------------

def t5_buckets(q_len_of, k_len_of, bidirectional, buckets=32, max_distance=128):
    """T5's relative position buckets (Raffel et al. 2020, section 2.1): half the buckets exact
    small distances, the rest logarithmically wider up to max_distance; an encoder gives the
    sign of the offset its own half of the buckets. Positions come from the inputs' shapes."""
    q = torch.arange(q_len_of.shape[1], device=q_len_of.device)
    k = torch.arange(k_len_of.shape[1], device=k_len_of.device)
    rel = k.unsqueeze(0) - q.unsqueeze(1)                        # key minus query position
    base = torch.zeros_like(rel)
    if bidirectional:
        buckets //= 2
        base = (rel > 0).long() * buckets
        dist = rel.abs()
    else:
        dist = (-rel).clamp(min=0)
    exact = buckets // 2
    wide = exact + (torch.log(dist.float() / exact) / math.log(max_distance / exact)
                    * (buckets - exact)).long()
    wide = torch.min(wide, torch.full_like(wide, buckets - 1))
    return base + torch.where(dist < exact, dist, wide)


class T5Attention(nn.Module):
    """T5 attention: no biases and no 1/sqrt(D) scaling (folded into the initialisation)."""

    def __init__(self, d, heads, q_seq, kv_seq, p):
        super().__init__()
        self.heads, self.hd, self.q_seq, self.kv_seq = heads, d // heads, q_seq, kv_seq
        self.q, self.k, self.v, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.drop = nn.Dropout(p)

    def forward(self, x, memory, bias):
        h, hd = self.heads, self.hd
        q = self.q(x).reshape(-1, self.q_seq, h, hd).transpose(1, 2)
        k = self.k(memory).reshape(-1, self.kv_seq, h, hd).transpose(1, 2)
        v = self.v(memory).reshape(-1, self.kv_seq, h, hd).transpose(1, 2)
        o = heads_attention(q, k, v, bias, self.drop, 1.0)
        return self.o(o.transpose(1, 2).reshape(-1, self.q_seq, h * hd))


class T5Layer(nn.Module):
    """An encoder layer (self-attention, FFN) or a decoder layer (causal self-attention,
    cross-attention, FFN), each sublayer pre-normalised with RMSNorm and followed by dropout
    before its residual add; the FFN is Linear-ReLU-dropout-Linear without biases."""

    def __init__(self, d, heads, ffn, seq, enc_seq, p, decoder):
        super().__init__()
        self.self_norm, self.ffn_norm = RMSNorm(d), RMSNorm(d)
        self.self_attn = T5Attention(d, heads, seq, seq, p)
        self.cross = None
        if decoder:
            self.cross_norm = RMSNorm(d)
            self.cross = T5Attention(d, heads, seq, enc_seq, p)
        self.wi = nn.Linear(d, ffn, bias=False)
        self.wo = nn.Linear(ffn, d, bias=False)
        self.drop = nn.Dropout(p)

    def forward(self, x, bias, memory=None):
        a = self.self_norm(x)
        x = x + self.drop(self.self_attn(a, a, bias))
        if self.cross is not None:
            x = x + self.drop(self.cross(self.cross_norm(x), memory, None))
        return x + self.drop(self.wo(self.drop(F.relu(self.wi(self.ffn_norm(x))))))


class T5(nn.Module):
    """T5 (Raffel et al. 2020): a shared token embedding, an encoder and a decoder whose first
    layer's relative position bias (32 buckets per head) every layer of its stack reuses, a final
    RMSNorm each, and the LM head tied to the embedding (scaled by d^-0.5). T5-small has 6 + 6
    identical layers; fewer here."""

    def __init__(self, d, heads, ffn, vocab, enc_seq, dec_seq, layers, p=0.1):
        super().__init__()
        self.d = d
        self.shared = nn.Embedding(vocab, d)
        self.enc_bias = nn.Embedding(32, heads)
        self.dec_bias = nn.Embedding(32, heads)
        self.encoder = nn.ModuleList(T5Layer(d, heads, ffn, enc_seq, enc_seq, p, False)
                                     for _ in range(layers))
        self.decoder = nn.ModuleList(T5Layer(d, heads, ffn, dec_seq, enc_seq, p, True)
                                     for _ in range(layers))
        self.enc_norm, self.dec_norm = RMSNorm(d), RMSNorm(d)
        self.drop = nn.Dropout(p)

    def forward(self, input_ids, decoder_input_ids):
        bias = self.enc_bias(t5_buckets(input_ids, input_ids, True)).permute(2, 0, 1)
        x = self.drop(self.shared(input_ids))
        for layer in self.encoder:
            x = layer(x, bias)
        memory = self.drop(self.enc_norm(x))
        bias = self.dec_bias(t5_buckets(decoder_input_ids, decoder_input_ids, False))
        bias = bias.permute(2, 0, 1) + causal_bias(decoder_input_ids)
        y = self.drop(self.shared(decoder_input_ids))
        for layer in self.decoder:
            y = layer(y, bias, memory)
        y = self.drop(self.dec_norm(y)) * self.d ** -0.5
        return torch.matmul(y, self.shared.weight.t())


# --- 4. ConvNeXt -----------------------------------------------------------------------------

class ChannelsFirstNorm(nn.LayerNorm):
    """LayerNorm over the channels of an NCHW tensor, by permuting them last and back."""

    def forward(self, x):
        return super().forward(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2)


class ConvNeXtBlock(nn.Module):
    """ConvNeXt block (Liu et al. 2022, "A ConvNet for the 2020s"): depthwise 7x7 conv, then in
    channels-last layout LayerNorm, a 4x inverted-bottleneck MLP with GELU and a learned
    per-channel layer scale (init 1e-6), added to the input. Stochastic depth is left out (the
    identity in eval mode; ConvNeXt-T trains with rate 0.1)."""

    def __init__(self, dim):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.scale = nn.Parameter(torch.full((dim,), 1e-6))

    def forward(self, x):
        y = self.norm(self.dw(x).permute(0, 2, 3, 1))
        y = self.fc2(F.gelu(self.fc1(y))) * self.scale
        return x + y.permute(0, 3, 1, 2)


class ConvNeXt(nn.Module):
    """ConvNeXt-T: a 4x4 stride-4 patchify stem, four stages (depths 3-3-9-3 in the paper;
    `depths` may cut them) separated by LayerNorm + 2x2 stride-2 convs, then global average
    pooling, LayerNorm and the classifier."""

    def __init__(self, widths, depths, classes):
        super().__init__()
        layers = [nn.Conv2d(3, widths[0], 4, stride=4), ChannelsFirstNorm(widths[0], eps=1e-6)]
        for i, (w, n) in enumerate(zip(widths, depths)):
            if i:
                layers += [ChannelsFirstNorm(widths[i - 1], eps=1e-6),
                           nn.Conv2d(widths[i - 1], w, 2, stride=2)]
            layers += [ConvNeXtBlock(w) for _ in range(n)]
        self.features = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(widths[-1], eps=1e-6)
        self.head = nn.Linear(widths[-1], classes)

    def forward(self, x):
        return self.head(self.norm(self.features(x).mean((-2, -1))))


# --- 5. MobileNetV3 --------------------------------------------------------------------------

def divisible(v, by=8):
    """Rounds a channel count to a multiple of `by`, never more than 10% down (the rounding
    MobileNetV2/V3 apply to every width)."""
    r = max(by, int(v + by / 2) // by * by)
    return r + by if r < 0.9 * v else r


class InvertedResidual(nn.Module):
    """MobileNetV3 bneck (Howard et al. 2019): 1x1 expansion (skipped when it would not widen),
    depthwise kxk conv, optional squeeze-and-excitation (Hu et al. 2018; squeeze to a quarter
    of the expansion, ReLU, HardSigmoid gate), linear 1x1 projection; BatchNorm after each conv,
    ReLU or HardSwish; a residual when stride 1 keeps the width."""

    def __init__(self, cin, k, exp, cout, se, hswish, stride):
        super().__init__()
        act = nn.Hardswish if hswish else nn.ReLU
        layers = []
        if exp != cin:
            layers += [nn.Conv2d(cin, exp, 1, bias=False), nn.BatchNorm2d(exp), act()]
        layers += [nn.Conv2d(exp, exp, k, stride, k // 2, groups=exp, bias=False),
                   nn.BatchNorm2d(exp), act()]
        self.expand = nn.Sequential(*layers)
        self.se = None
        if se:
            sq = divisible(exp // 4)
            self.se = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(exp, sq, 1), nn.ReLU(),
                                    nn.Conv2d(sq, exp, 1), nn.Hardsigmoid())
        self.project = nn.Sequential(nn.Conv2d(exp, cout, 1, bias=False), nn.BatchNorm2d(cout))
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        y = self.expand(x)
        if self.se is not None:
            y = y * self.se(y)
        y = self.project(y)
        return x + y if self.residual else y


# Table 1 of the paper, MobileNetV3-Large: kernel, expansion, output, SE, HardSwish, stride.
MOBILENET_V3_LARGE = [
    (3, 16, 16, False, False, 1), (3, 64, 24, False, False, 2), (3, 72, 24, False, False, 1),
    (5, 72, 40, True, False, 2), (5, 120, 40, True, False, 1), (5, 120, 40, True, False, 1),
    (3, 240, 80, False, True, 2), (3, 200, 80, False, True, 1), (3, 184, 80, False, True, 1),
    (3, 184, 80, False, True, 1), (3, 480, 112, True, True, 1), (3, 672, 112, True, True, 1),
    (5, 672, 160, True, True, 2), (5, 960, 160, True, True, 1), (5, 960, 160, True, True, 1),
]


class MobileNetV3(nn.Module):
    """MobileNetV3-Large, all fifteen bnecks: a 3x3 stride-2 stem of 16 (HardSwish), the table
    above with every width times `mult` (rounded to multiples of 8), a 1x1 conv to 6 x the last
    width, global pooling, a 1x1 conv to `head` (HardSwish, no BatchNorm), dropout 0.2 and the
    classifier."""

    def __init__(self, mult, head, classes):
        super().__init__()
        cin = divisible(16 * mult)
        layers = [nn.Conv2d(3, cin, 3, 2, 1, bias=False), nn.BatchNorm2d(cin), nn.Hardswish()]
        for k, exp, cout, se, hs, s in MOBILENET_V3_LARGE:
            cout = divisible(cout * mult)
            layers.append(InvertedResidual(cin, k, divisible(exp * mult), cout, se, hs, s))
            cin = cout
        last = 6 * cin
        layers += [nn.Conv2d(cin, last, 1, bias=False), nn.BatchNorm2d(last), nn.Hardswish()]
        self.features = nn.Sequential(*layers)
        self.head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(last, head, 1),
                                  nn.Hardswish(), nn.Flatten(), nn.Dropout(0.2),
                                  nn.Linear(head, classes))

    def forward(self, x):
        return self.head(self.features(x))


# --- 6. Swin ---------------------------------------------------------------------------------

class SwinBlock(nn.Module):
    """Swin Transformer block (Liu et al. 2021): attention inside non-overlapping windows of
    window x window tokens, every second block on windows shifted by half a window (torch.roll,
    with a mask keeping regions that the roll brought together apart), a learned relative
    position bias per head gathered from a (2w-1)^2 table with a constant index, then an MLP."""

    def __init__(self, dim, heads, res, window, shift, p):
        super().__init__()
        if res <= window:  # a map no bigger than a window is one window, never shifted
            window, shift = res, 0
        self.dim, self.heads, self.res, self.window, self.shift = dim, heads, res, window, shift
        self.hd = dim // heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Dropout(p),
                                 nn.Linear(4 * dim, dim))
        self.drop = nn.Dropout(p)
        self.table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads) * 0.02)
        # Offsets between the tokens of a window, (dy, dx) shifted to 0..2w-2, as table rows.
        yy, xx = torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")
        coords = torch.stack([yy.flatten(), xx.flatten()])
        offset = (coords[:, :, None] - coords[:, None, :]) + (window - 1)
        self.register_buffer("index", (offset[0] * (2 * window - 1) + offset[1]).flatten())
        self.mask = None
        if shift:
            # Label the nine regions of the shifted map; tokens of a window from different
            # regions may not attend to each other.
            label = torch.zeros(res, res)
            cuts = (slice(0, -window), slice(-window, -shift), slice(-shift, None))
            n = 0
            for ys in cuts:
                for xs in cuts:
                    label[ys, xs] = n
                    n += 1
            w = self.partition(label.reshape(1, res, res, 1)).squeeze(-1)  # [nW, w*w]
            self.mask = torch.zeros(w.shape[0], window ** 2, window ** 2).masked_fill(
                w.unsqueeze(1) != w.unsqueeze(2), -100.0)

    def partition(self, x):
        # [B, R, R, C] -> [B * nW, w*w, C]
        n, w, c = self.res // self.window, self.window, x.shape[-1]
        x = x.reshape(-1, n, w, n, w, c).permute(0, 1, 3, 2, 4, 5)
        return x.reshape(-1, w * w, c)

    def merge(self, x):
        # [B * nW, w*w, C] -> [B, R, R, C]
        n, w = self.res // self.window, self.window
        x = x.reshape(-1, n, n, w, w, self.dim).permute(0, 1, 3, 2, 4, 5)
        return x.reshape(-1, self.res, self.res, self.dim)

    def attention(self, x):
        t, h, hd = self.window ** 2, self.heads, self.hd
        q, k, v = self.qkv(x).reshape(-1, t, 3, h, hd).permute(2, 0, 3, 1, 4).unbind(0)
        bias = self.table[self.index].reshape(t, t, h).permute(2, 0, 1)
        scores = torch.matmul(q * hd ** -0.5, k.transpose(-2, -1)) + bias
        if self.mask is not None:
            windows = self.mask.shape[0]
            scores = scores.reshape(-1, windows, h, t, t) + self.mask.unsqueeze(1)
            scores = scores.reshape(-1, h, t, t)
        o = torch.matmul(self.drop(scores.softmax(-1)), v)
        return self.proj(o.transpose(1, 2).reshape(-1, t, self.dim))

    def forward(self, x):
        y = self.norm1(x)
        if self.shift:
            y = torch.roll(y, (-self.shift, -self.shift), (1, 2))
        y = self.merge(self.attention(self.partition(y)))
        if self.shift:
            y = torch.roll(y, (self.shift, self.shift), (1, 2))
        x = x + self.drop(y)
        return x + self.drop(self.mlp(self.norm2(x)))


class PatchMerging(nn.Module):
    """Swin's downsampling: each 2x2 group of tokens concatenated (4C), LayerNorm, Linear 4C ->
    2C without bias."""

    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(4 * dim)
        self.reduce = nn.Linear(4 * dim, 2 * dim, bias=False)

    def forward(self, x):
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]],
                      -1)
        return self.reduce(self.norm(x))


class Swin(nn.Module):
    """Swin-T: a patch x patch stride-patch embedding conv and LayerNorm, four stages of
    blocks alternating plain and shifted windows (depths 2-2-6-2 in the paper; `depths` may cut
    the third) with patch merging between them, a final LayerNorm, average pooling and the
    classifier. Tokens stay [B, H, W, C] throughout."""

    def __init__(self, image, patch, window, embed, depths, heads, classes, p=0.1):
        super().__init__()
        self.embed = nn.Conv2d(3, embed, patch, stride=patch)
        self.embed_norm = nn.LayerNorm(embed)
        self.drop = nn.Dropout(p)
        layers, dim, res = [], embed, image // patch
        for i, (n, h) in enumerate(zip(depths, heads)):
            if i:
                layers.append(PatchMerging(dim))
                dim, res = 2 * dim, res // 2
            layers += [SwinBlock(dim, h, res, window, (j % 2) * (window // 2), p)
                       for j in range(n)]
        self.layers = nn.Sequential(*layers)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.drop(self.embed_norm(self.embed(x).permute(0, 2, 3, 1)))
        return self.head(self.norm(self.layers(x)).mean((1, 2)))


# --- 7. UNet ---------------------------------------------------------------------------------

class ResBlock(nn.Module):
    """DDPM's residual block (Ho et al. 2020, after Wide ResNets): GroupNorm, SiLU, 3x3 conv, the
    timestep embedding projected and added per channel, GroupNorm, SiLU, dropout, 3x3 conv, and
    a 1x1 conv on the shortcut when the width changes."""

    def __init__(self, cin, cout, temb, groups, p):
        super().__init__()
        self.norm1, self.norm2 = nn.GroupNorm(groups, cin), nn.GroupNorm(groups, cout)
        self.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        self.temb = nn.Linear(temb, cout)
        self.drop = nn.Dropout(p)
        self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x, t):
        h = self.conv1(F.silu(self.norm1(x)))
        h = h + self.temb(F.silu(t))[:, :, None, None]
        h = self.conv2(self.drop(F.silu(self.norm2(h))))
        return self.skip(x) + h


class UNet(nn.Module):
    """A diffusion UNet: the encoder-decoder with skip concatenations of Ronneberger et al.
    (2015) as DDPM builds it (Ho et al. 2020): a sinusoidal timestep embedding through a 2-layer
    SiLU MLP, one ResBlock per resolution on the way down (DDPM has two and self-attention at
    16x16; both left out), stride-2 conv downsampling, a middle ResBlock, and on the way up each
    level's skip concatenated, a ResBlock and nearest 2x upsampling followed by a 3x3 conv."""

    def __init__(self, base, mults, groups, p=0.1):
        super().__init__()
        self.base = base
        temb = 4 * base
        self.time = nn.Sequential(nn.Linear(base, temb), nn.SiLU(), nn.Linear(temb, temb))
        widths = [base * m for m in mults]
        self.stem = nn.Conv2d(3, base, 3, padding=1)
        self.down, self.downsample = nn.ModuleList(), nn.ModuleList()
        cin = base
        for i, w in enumerate(widths):
            self.down.append(ResBlock(cin, w, temb, groups, p))
            if i + 1 < len(widths):
                self.downsample.append(nn.Conv2d(w, w, 3, stride=2, padding=1))
            cin = w
        self.middle = ResBlock(cin, cin, temb, groups, p)
        self.up, self.upsample = nn.ModuleList(), nn.ModuleList()
        for i, w in reversed(list(enumerate(widths))):
            self.up.append(ResBlock(cin + w, w, temb, groups, p))
            if i:
                self.upsample.append(nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"),
                                                   nn.Conv2d(w, w, 3, padding=1)))
            cin = w
        self.out = nn.Sequential(nn.GroupNorm(groups, cin), nn.SiLU(),
                                 nn.Conv2d(cin, 3, 3, padding=1))

    def forward(self, x, timestep):
        # Sinusoidal embedding of the timestep: sin and cos of t * 10000^(-i/half).
        half = self.base // 2
        freqs = torch.exp(torch.arange(half).float() * (-math.log(10000.0) / half))
        angles = timestep.unsqueeze(1) * freqs.unsqueeze(0)
        t = self.time(torch.cat([angles.sin(), angles.cos()], 1))
        h = self.stem(x)
        skips = []
        for i, block in enumerate(self.down):
            h = block(h, t)
            skips.append(h)
            if i < len(self.downsample):
                h = self.downsample[i](h)
        h = self.middle(h, t)
        for i, block in enumerate(self.up):
            h = block(torch.cat([h, skips.pop()], 1), t)
            if i < len(self.upsample):
                h = self.upsample[i](h)
        return self.out(h)


# --- 8. ViT ----------------------------------------------------------------------------------

class ViT(nn.Module):
    """ViT (Dosovitskiy et al. 2021): patch x patch stride-patch conv embedding, a class token
    broadcast over the batch with expand(n, -1, -1) (n read from the input's shape, as
    torchvision's vit_b_16 does) and concatenated in front, learned position embeddings,
    pre-LN encoder layers (ViT-B/16 has 12 identical ones; fewer here) of self-attention and a
    GELU MLP, a final LayerNorm and the classifier on the class token."""

    def __init__(self, image, patch, d, heads, mlp, layers, classes, p=0.1):
        super().__init__()
        seq = (image // patch) ** 2 + 1
        self.patch = nn.Conv2d(3, d, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, d))
        self.position = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        self.drop = nn.Dropout(p)
        self.blocks = nn.ModuleList(nn.ModuleDict({
            "norm1": nn.LayerNorm(d, eps=1e-6), "attn": SelfAttention(d, heads, seq, p),
            "norm2": nn.LayerNorm(d, eps=1e-6),
            "mlp": nn.Sequential(nn.Linear(d, mlp), nn.GELU(), nn.Dropout(p), nn.Linear(mlp, d))})
            for _ in range(layers))
        self.norm = nn.LayerNorm(d, eps=1e-6)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        n = x.shape[0]
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(n, -1, -1), x], 1)
        x = self.drop(x + self.position)
        for b in self.blocks:
            x = x + self.drop(b["attn"](b["norm1"](x)))
            x = x + self.drop(b["mlp"](b["norm2"](x)))
        return self.head(self.norm(x)[:, 0])


# --- The corpus ------------------------------------------------------------------------------

def tokens(*names_and_lengths, vocab=1000):
    def make(batch):
        args = tuple(torch.randint(0, vocab, (batch, s)) for _, s in names_and_lengths)
        return args, [n for n, _ in names_and_lengths]
    return make


def image(size):
    return lambda batch: ((torch.randn(batch, 3, size, size),), ["input"])


def noisy_image(size):
    return lambda batch: ((torch.randn(batch, 3, size, size), torch.rand(batch) * 1000),
                          ["input", "timestep"])


# Per architecture: the class; its paper configuration (graph-only export) with the inputs, the
# batch to plan eight GPUs with and the --shrink map; its small configuration (--weights). A
# shrink map sends each extent to a smaller one of the same kind and keeps every ratio the
# graph relies on: heads x head size = width, query heads / key-value heads (a constant of the
# Expand), the rotary half, the MoE capacity. --shrink maps a grouped convolution's `group`
# too, so convnext's depthwise convolutions shrink with their widths; mobilenet_v3 shrinks only
# its image, head and classes (its many channel counts share values with its spatial sizes).
ARCHS = {
    "llama": dict(
        cls=Llama, opset=17, batch=64,
        big=dict(d=2048, heads=16, kv_heads=4, ffn=5632, vocab=32000, seq=256, layers=4),
        big_inputs=tokens(("input_ids", 256)),
        # width, heads, kv heads, head size, rotary half, kv width, ffn, vocab, sequence
        shrink="2048=64,16=8,4=2,128=8,64=4,512=16,5632=128,32000=1000,256=16",
        small=dict(d=64, heads=4, kv_heads=2, ffn=128, vocab=1000, seq=16, layers=2),
        small_inputs=tokens(("input_ids", 16))),
    "moe": dict(
        cls=MoETransformer, opset=17, batch=128,
        big=dict(d=768, heads=12, ffn=3072, experts=8, vocab=32000, seq=128, layers=2),
        big_inputs=tokens(("input_ids", 128)),
        # width, fused QKV width, heads, head size, ffn, experts, capacity
        # (ceil(2 x 16 x 1.25 / 4) = 10), vocab, sequence
        shrink="768=64,2304=192,12=4,64=16,3072=128,8=4,40=10,32000=1000,128=16",
        small=dict(d=64, heads=4, ffn=128, experts=4, vocab=1000, seq=16, layers=2),
        small_inputs=tokens(("input_ids", 16))),
    "t5": dict(
        cls=T5, opset=17, batch=128,
        big=dict(d=512, heads=8, ffn=2048, vocab=32128, enc_seq=128, dec_seq=64, layers=2),
        big_inputs=tokens(("input_ids", 128), ("decoder_input_ids", 64)),
        # width, heads, head size and decoder length (both 64: one entry), ffn, vocab, encoder
        # length; the 32 position buckets stay
        shrink="512=64,8=4,64=16,2048=128,32128=1000,128=32",
        small=dict(d=64, heads=4, ffn=128, vocab=1000, enc_seq=16, dec_seq=8, layers=2),
        small_inputs=tokens(("input_ids", 16), ("decoder_input_ids", 8))),
    "convnext": dict(
        cls=ConvNeXt, opset=13, batch=256,
        big=dict(widths=[96, 192, 384, 768], depths=[1, 1, 3, 1], classes=1000),
        big_inputs=image(224),
        # stage widths and their 4x (384 and 768 are both: 4 x 12 = 48, 4 x 24 = 96), image,
        # classes
        shrink="96=12,192=24,384=48,768=96,1536=192,3072=384,224=32,1000=10",
        small=dict(widths=[16, 32, 64, 128], depths=[1, 1, 3, 1], classes=10),
        small_inputs=image(32)),
    "mobilenet_v3": dict(
        cls=MobileNetV3, opset=15, batch=512,
        big=dict(mult=1.0, head=1280, classes=1000),
        big_inputs=image(224),
        shrink="224=64,1280=64,1000=10",
        small=dict(mult=0.25, head=64, classes=10),
        small_inputs=image(32)),
    "swin": dict(
        cls=Swin, opset=17, batch=256,
        big=dict(image=224, patch=4, window=7, embed=96, depths=[2, 2, 2, 2],
                 heads=[3, 6, 12, 24], classes=1000),
        big_inputs=image(224),
        # widths (stage widths, their 3x for the fused QKV and 4x, one entry each), head size
        # 32; heads, windows and the image stay (the window tiling and the shift mask depend
        # on them)
        shrink="96=12,192=24,384=48,768=96,1536=192,3072=384,288=36,576=72,1152=144,"
               "2304=288,32=4,1000=10",
        small=dict(image=32, patch=2, window=4, embed=16, depths=[2, 2, 2, 2],
                   heads=[1, 2, 4, 8], classes=10),
        small_inputs=image(32)),
    "unet": dict(
        cls=UNet, opset=13, batch=128,
        big=dict(base=128, mults=[1, 2, 4], groups=32),
        big_inputs=noisy_image(64),
        # widths and concatenated widths (128+256 and 256+512 and 512+512), the timestep
        # embedding (512) and its half (64, with the 64x64 image): all divided by 4, so the
        # 32 groups still divide every width
        shrink="64=16,128=32,256=64,384=96,512=128,768=192,1024=256",
        small=dict(base=16, mults=[1, 2, 4], groups=8),
        small_inputs=noisy_image(32)),
    "vit": dict(
        cls=ViT, opset=17, batch=256,
        big=dict(image=224, patch=16, d=768, heads=12, mlp=3072, layers=4, classes=1000),
        big_inputs=image(224),
        # image, tokens (14 x 14 + 1 -> 2 x 2 + 1), width, fused QKV width, head size, mlp,
        # classes
        shrink="224=32,197=5,768=96,2304=288,64=8,3072=384,1000=10",
        small=dict(image=32, patch=8, d=64, heads=4, mlp=128, layers=2, classes=10),
        small_inputs=image(32)),
}
NAMES = list(ARCHS)
FLOAT_TYPES = {1, 10, 11, 16}  # FLOAT, FLOAT16, DOUBLE, BFLOAT16
WEIGHTS = False  # --weights: the small configurations, weights inline, batch 2


def files_of(name):
    """(file stem, mode) of the two exports of `name`, training mode first."""
    stem = name + "_small" if WEIGHTS else name
    return [(stem + "_train", "train"), (stem, "infer")]


def export(name, out_dir):
    arch = ARCHS[name]
    config = "small" if WEIGHTS else "big"
    # The training-mode file first: the eval-mode one, whose presence main() checks, is then
    # written last.
    for stem, mode in files_of(name):
        path = os.path.join(out_dir, stem + ".onnx")
        if os.path.exists(path):
            continue
        torch.manual_seed(0)
        model = arch["cls"](**arch[config])
        args, input_names = arch[config + "_inputs"](2)
        axes = {}
        if not WEIGHTS:
            axes = {n: {0: "batch"} for n in input_names + ["output"]}
        train = mode == "train"
        model.train(train)
        with tempfile.TemporaryDirectory() as tmp:
            full = os.path.join(tmp, stem + ".onnx")
            with torch.no_grad():
                torch.onnx.export(
                    model, args, full, input_names=input_names, output_names=["output"],
                    dynamic_axes=axes or None, opset_version=arch["opset"],
                    training=(torch.onnx.TrainingMode.TRAINING if train
                              else torch.onnx.TrainingMode.EVAL),
                    do_constant_folding=not train)
            proto = onnx.load(full)
        if not WEIGHTS:
            data_file = stem + ".onnx.data"
            offset = 0
            for init in proto.graph.initializer:
                size = len(init.raw_data)
                # Parameters point into the never-written file; small constants and integer
                # tensors (indices, shapes) stay inline, as exporters keep them.
                if init.data_type not in FLOAT_TYPES or size < 64:
                    continue
                graph_only.point_to_external(onnx, init, data_file, offset, size)
                offset += size
        graph_only.save(onnx, proto, path)


def write_listing(out_dir):
    """OUT_DIR/corpus.json: every corpus file OUT_DIR holds, with how to plan it."""
    entries = []
    for name in NAMES:
        for stem, mode in files_of(name):
            if not os.path.exists(os.path.join(out_dir, stem + ".onnx")):
                continue
            arch = ARCHS[name]
            entries.append({
                "file": stem + ".onnx", "name": name, "mode": mode, "opset": arch["opset"],
                # The small exports have a static batch of 2: plan them without --batch.
                "batch": None if WEIGHTS else arch["batch"],
                "shrink": None if WEIGHTS else arch["shrink"]})
    path = os.path.join(out_dir, "corpus.json")
    with open(path + ".part", "w") as f:
        json.dump(entries, f, indent=1)
        f.write("\n")
    os.replace(path + ".part", path)


def main():
    global WEIGHTS
    if "--weights" in sys.argv[1:]:
        WEIGHTS = True
        sys.argv.remove("--weights")
    rc = graph_only.main("export_corpus", __doc__, ARCHS, export, NAMES)
    if rc == 0:
        write_listing(sys.argv[1])
    return rc


if __name__ == "__main__":
    sys.exit(main())
