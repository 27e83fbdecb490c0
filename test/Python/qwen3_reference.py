"""A NumPy float64 Qwen3 decoder, written independently of tang (plain
array code, the way the transformers implementation reads), to check
tang.models.qwen3's graphs against: same weight layout, same caches."""

import numpy as np


def rms_norm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def rope(x, positions, theta):
    """x [..., T, H, Dh] rotated (rotate-half) at positions [T]."""
    dh = x.shape[-1]
    inv = theta ** (-np.arange(0, dh, 2, dtype=np.float64) / dh)
    ang = np.asarray(positions, np.float64)[:, None] * inv[None]   # [T, Dh/2]
    cos = np.concatenate([np.cos(ang)] * 2, -1)[:, None, :]
    sin = np.concatenate([np.sin(ang)] * 2, -1)[:, None, :]
    half = dh // 2
    rot = np.concatenate([-x[..., half:], x[..., :half]], -1)
    return x * cos + rot * sin


def layer(cfg, W, i, x, positions, kc, vc, batch_of_row, context):
    """x [R, D] of rows at positions[r] in sequence batch_of_row[r]; writes
    their keys/values into kc/vc [layers, B, Hk, C, Dh] and attends each
    row over positions 0..context(r)-1 of its sequence."""
    H, Hk, Dh, F = cfg.heads, cfg.kv_heads, cfg.head_dim, cfg.ffn
    R = x.shape[0]
    h = rms_norm(x, W["attn_norm"][i], cfg.eps)
    qkv = h @ W["wqkv"][i].T
    q = qkv[:, :H * Dh].reshape(R, H, Dh)
    k = qkv[:, H * Dh:(H + Hk) * Dh].reshape(R, Hk, Dh)
    v = qkv[:, (H + Hk) * Dh:].reshape(R, Hk, Dh)
    q = rope(rms_norm(q, W["q_norm"][i], cfg.eps), positions, cfg.rope_theta)
    k = rope(rms_norm(k, W["k_norm"][i], cfg.eps), positions, cfg.rope_theta)
    for r in range(R):
        kc[i, batch_of_row[r], :, positions[r]] = k[r]
        vc[i, batch_of_row[r], :, positions[r]] = v[r]
    o = np.zeros((R, H, Dh))
    g = H // Hk
    for r in range(R):
        n = context(r)
        for hh in range(H):
            K = kc[i, batch_of_row[r], hh // g, :n]
            V = vc[i, batch_of_row[r], hh // g, :n]
            s = K @ q[r, hh] / np.sqrt(Dh)
            p = np.exp(s - s.max())
            o[r, hh] = (p / p.sum()) @ V
    x = x + o.reshape(R, H * Dh) @ W["wo"][i].T
    gu = rms_norm(x, W["mlp_norm"][i], cfg.eps) @ W["wgu"][i].T
    gate, up = gu[:, :F], gu[:, F:]
    return x + (gate / (1 + np.exp(-gate)) * up) @ W["wd"][i].T


def logits(cfg, W, x):
    return rms_norm(x, W["norm"], cfg.eps) @ W["lm_head"].T


def decode_step(cfg, W, tokens, kc, vc, pos):
    """(next tokens, logits) of one decode step; kc/vc updated."""
    x = W["embed"][np.asarray(tokens)]
    B = x.shape[0]
    for i in range(cfg.layers):
        x = layer(cfg, W, i, x, [pos] * B, kc, vc, list(range(B)),
                  lambda r: pos + 1)
    lg = logits(cfg, W, x)
    return lg.argmax(-1), lg


def prefill(cfg, W, tokens, kc, vc):
    x = W["embed"][np.asarray(tokens)]
    T = x.shape[0]
    for i in range(cfg.layers):
        x = layer(cfg, W, i, x, list(range(T)), kc, vc, [0] * T,
                  lambda r: r + 1)
    lg = logits(cfg, W, x[-1:])
    return lg.argmax(-1), lg
