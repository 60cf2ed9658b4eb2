"""The peer's models in PyTorch, written as a PyTorch user writes them (scripts/gpu-peer on a
GPU, scripts/bench-peer on the CPU cores): GPT-2 (tied embeddings, pre-LayerNorm blocks,
tanh GELU, causal attention), BERT (post-LayerNorm encoder, masked-LM and next-sentence
heads), and LAMB (PyTorch has none), following You et al. 2019 as zerort's engine does:
Adam's update scaled per tensor by ||w|| / ||update||. torch is imported when they are
asked for, so that importing this module costs nothing."""
import math


def torch_models():
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    def attention(q, k, v, causal=False, mask=None):
        if hasattr(F, "scaled_dot_product_attention"):  # PyTorch 2: flash or memory-efficient
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
        att = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        if causal:
            T = q.shape[-2]
            att = att.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=q.device).tril(),
                                  float("-inf"))
        if mask is not None:
            att = att.masked_fill(~mask, float("-inf"))
        return att.softmax(-1) @ v

    class Gpt2Block(nn.Module):
        def __init__(self, C, NH):
            super().__init__()
            self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
            self.c_attn, self.c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
            self.NH = NH

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
            q, k, v = (t.view(B, T, self.NH, C // self.NH).transpose(1, 2) for t in (q, k, v))
            y = attention(q, k, v, causal=True)
            x = x + self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class Gpt2(nn.Module):
        def __init__(self, L=12, C=768, NH=12, V=50257, P=1024):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(P, C)
            self.h = nn.ModuleList(Gpt2Block(C, NH) for _ in range(L))
            self.ln_f = nn.LayerNorm(C)
            self.L, self.C = L, C
            for p in self.parameters():
                if p.dim() > 1:
                    nn.init.normal_(p, std=0.02)

        def forward(self, idx, targets):
            T = idx.shape[1]
            x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
            for block in self.h:
                x = block(x)
            logits = F.linear(self.ln_f(x), self.wte.weight)  # tied, as GPT-2's
            return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))

    class BertLayer(nn.Module):
        def __init__(self, C, NH):
            super().__init__()
            self.qkv, self.out = nn.Linear(C, 3 * C), nn.Linear(C, C)
            self.ln1, self.ln2 = nn.LayerNorm(C, eps=1e-12), nn.LayerNorm(C, eps=1e-12)
            self.fc1, self.fc2 = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)
            self.NH = NH

        def forward(self, x, mask):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q, k, v = (t.view(B, T, self.NH, C // self.NH).transpose(1, 2) for t in (q, k, v))
            y = attention(q, k, v, mask=mask)
            x = self.ln1(x + self.out(y.transpose(1, 2).contiguous().view(B, T, C)))
            return self.ln2(x + self.fc2(F.gelu(self.fc1(x))))

    class Bert(nn.Module):
        def __init__(self, L=12, C=768, NH=12, V=30522, P=512):
            super().__init__()
            self.word, self.pos = nn.Embedding(V, C), nn.Embedding(P, C)
            self.token_type = nn.Embedding(2, C)  # not "type": nn.Module has a type()
            self.ln = nn.LayerNorm(C, eps=1e-12)
            self.layers = nn.ModuleList(BertLayer(C, NH) for _ in range(L))
            self.mlm_dense, self.mlm_ln = nn.Linear(C, C), nn.LayerNorm(C, eps=1e-12)
            self.mlm_bias = nn.Parameter(torch.zeros(V))
            self.pooler, self.nsp = nn.Linear(C, C), nn.Linear(C, 2)
            self.L, self.C = L, C
            for p in self.parameters():
                if p.dim() > 1:
                    nn.init.normal_(p, std=0.02)

        def forward(self, ids, types, mask, mlm_pos, mlm_labels, nsp_labels):
            T = ids.shape[1]
            x = self.ln(self.word(ids) + self.pos(torch.arange(T, device=ids.device)) + self.token_type(types))
            for layer in self.layers:
                x = layer(x, mask)
            h = x.view(-1, self.C)[mlm_pos]
            h = self.mlm_ln(F.gelu(self.mlm_dense(h)))
            logits = F.linear(h, self.word.weight, self.mlm_bias)
            nsp = self.nsp(torch.tanh(self.pooler(x[:, 0])))
            return (F.cross_entropy(logits.float(), mlm_labels) +
                    F.cross_entropy(nsp.float(), nsp_labels))

    class Lamb(torch.optim.Optimizer):
        def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.01):
            super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay))

        @torch.no_grad()
        def step(self):
            for g in self.param_groups:
                b1, b2 = g["betas"]
                for p in g["params"]:
                    if p.grad is None:
                        continue
                    st = self.state[p]
                    if not st:
                        st["step"], st["m"], st["v"] = 0, torch.zeros_like(p), torch.zeros_like(p)
                    st["step"] += 1
                    m, v = st["m"], st["v"]
                    m.mul_(b1).add_(p.grad, alpha=1 - b1)
                    v.mul_(b2).addcmul_(p.grad, p.grad, value=1 - b2)
                    u = (m / (1 - b1 ** st["step"])) / ((v / (1 - b2 ** st["step"])).sqrt() + g["eps"])
                    u.add_(p, alpha=g["weight_decay"])
                    wn, un = p.norm(), u.norm()
                    trust = torch.where((wn > 0) & (un > 0), wn / un, torch.ones_like(wn))
                    p.add_(u * trust, alpha=-g["lr"])

    return Gpt2, Bert, Lamb
