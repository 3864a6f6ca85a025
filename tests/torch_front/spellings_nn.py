"""The probe's cases of torch.nn.functional and the nn layers (PyTorch's weights copied into
execmode's first)."""

from __future__ import annotations

from torch_front.spelling_inputs import (
    CASES,
    A,
    B,
    a,
    b,
    c,
    cases,
    img,
    labels,
    pos,
    seq,
    shape_of,
)

# --- torch.nn.functional -------------------------------------------------------------------
ACTIVATIONS = ["relu", "gelu", "silu", "elu", "leaky_relu", "softplus", "sigmoid", "tanh",
               "hardtanh", "mish", "logsigmoid", "relu6", "selu", "softsign", "hardswish"]
for _name in ACTIVATIONS:
    CASES.append((f"F.{_name}", lambda t, n=_name: getattr(t.nn.functional, n)(a(t))))

cases([
    ("F.gelu(approximate='tanh')", lambda t: t.nn.functional.gelu(a(t), approximate="tanh")),
    ("F.softmax(dim)", lambda t: t.nn.functional.softmax(a(t), dim=-1)),
    ("F.log_softmax", lambda t: t.nn.functional.log_softmax(a(t), dim=1)),
    ("F.cross_entropy", lambda t: t.nn.functional.cross_entropy(a(t), labels(t))),
    ("F.cross_entropy(ignore_index)", lambda t: t.nn.functional.cross_entropy(
        a(t), t.tensor([0, -1, 2]), ignore_index=-1)),
    ("F.cross_entropy(label_smoothing)", lambda t: t.nn.functional.cross_entropy(
        a(t), labels(t), label_smoothing=0.1)),
    ("F.cross_entropy(reduction='none')", lambda t: t.nn.functional.cross_entropy(
        a(t), labels(t), reduction="none")),
    ("F.cross_entropy on (B, C, T)", lambda t: t.nn.functional.cross_entropy(
        b(t), t.tensor([[0, 1, 2, 0], [2, 2, 1, 0]]))),
    ("F.nll_loss", lambda t: t.nn.functional.nll_loss(a(t).log_softmax(1), labels(t))),
    ("F.mse_loss", lambda t: t.nn.functional.mse_loss(a(t), pos(t))),
    ("F.l1_loss", lambda t: t.nn.functional.l1_loss(a(t), pos(t))),
    ("F.smooth_l1_loss", lambda t: t.nn.functional.smooth_l1_loss(a(t), pos(t))),
    ("F.huber_loss", lambda t: t.nn.functional.huber_loss(a(t), pos(t), delta=0.5)),
    ("F.binary_cross_entropy", lambda t: t.nn.functional.binary_cross_entropy(
        a(t).sigmoid(), (pos(t) > 0.7).float())),
    ("F.binary_cross_entropy_with_logits", lambda t: t.nn.functional
     .binary_cross_entropy_with_logits(a(t), (pos(t) > 0.7).float())),
    ("F.kl_div(batchmean)", lambda t: t.nn.functional.kl_div(
        a(t).log_softmax(1), pos(t).softmax(1), reduction="batchmean")),
    ("F.linear", lambda t: t.nn.functional.linear(a(t), c(t).t(), t.ones(5))),
    ("F.conv1d", lambda t: t.nn.functional.conv1d(seq(t).transpose(1, 2),
                                                   t.tensor(B[:, :, :3].repeat(2, 1)[:, :4]),
                                                   padding=1)),
    ("F.conv2d", lambda t: t.nn.functional.conv2d(img(t), t.ones(4, 3, 3, 3) * 0.1,
                                                   stride=1, padding=1)),
    ("F.max_pool2d", lambda t: t.nn.functional.max_pool2d(img(t), 2)),
    ("F.avg_pool2d", lambda t: t.nn.functional.avg_pool2d(img(t), kernel_size=2, stride=2)),
    ("F.adaptive_avg_pool2d", lambda t: t.nn.functional.adaptive_avg_pool2d(img(t), (1, 1))),
    ("F.dropout(training=False)", lambda t: t.nn.functional.dropout(a(t), 0.5,
                                                                    training=False)),
    ("F.dropout (shape)", lambda t: shape_of(t.nn.functional.dropout(a(t), 0.5))),
    ("F.embedding", lambda t: t.nn.functional.embedding(labels(t), c(t))),
    ("F.layer_norm", lambda t: t.nn.functional.layer_norm(a(t), (4,))),
    ("F.group_norm", lambda t: t.nn.functional.group_norm(img(t), 1)),
    ("F.normalize", lambda t: t.nn.functional.normalize(a(t), dim=1)),
    ("F.pad", lambda t: t.nn.functional.pad(a(t), (1, 2))),
    ("F.one_hot", lambda t: t.nn.functional.one_hot(labels(t), 4)),
    ("F.cosine_similarity", lambda t: t.nn.functional.cosine_similarity(a(t), pos(t))),
    ("F.scaled_dot_product_attention(is_causal)", lambda t: t.nn.functional
     .scaled_dot_product_attention(b(t), b(t), b(t), is_causal=True)),
    ("F.glu", lambda t: t.nn.functional.glu(a(t), dim=-1)),
    ("F.interpolate(nearest)", lambda t: t.nn.functional.interpolate(img(t), scale_factor=2,
                                                                      mode="nearest")),
    ("F.pairwise_distance", lambda t: t.nn.functional.pairwise_distance(a(t), pos(t))),
    ("F.softmin", lambda t: t.nn.functional.softmin(a(t), dim=1)),
    ("F.unfold", lambda t: t.nn.functional.unfold(img(t), kernel_size=2)),
])


# --- nn layers (PyTorch's weights copied into execmode's) -----------------------------------
def layer(name, build, x, train=False):
    def run(t):
        if t.__name__ == "torch":
            t.manual_seed(0)
            mod = build(t)
            LAYER_WEIGHTS[name] = {k: w.detach().numpy().copy()
                                   for k, w in mod.state_dict().items()}
        else:
            mod = build(t)
            mod.load_state_dict({k: t.tensor(w) for k, w in LAYER_WEIGHTS[name].items()})
        mod.train(train)
        out = mod(*x(t)) if isinstance(x(t), tuple) else mod(x(t))
        if isinstance(out, tuple) and isinstance(out[1], tuple):  # LSTM's (h, c)
            out = (out[0], *out[1])
        return out
    CASES.append((name, run))


LAYER_WEIGHTS: dict[str, dict] = {}

layer("nn.Linear", lambda t: t.nn.Linear(4, 5), a)
layer("nn.Linear(bias=False)", lambda t: t.nn.Linear(4, 2, bias=False), a)
layer("nn.Conv1d", lambda t: t.nn.Conv1d(4, 3, 3, padding=1), lambda t: seq(t).transpose(1, 2))
layer("nn.Conv2d", lambda t: t.nn.Conv2d(3, 4, 3, stride=2, padding=1), img)
layer("nn.ConvTranspose2d", lambda t: t.nn.ConvTranspose2d(3, 2, 2, stride=2), img)
layer("nn.BatchNorm1d (train)", lambda t: t.nn.BatchNorm1d(4), a, train=True)
layer("nn.BatchNorm2d (eval)", lambda t: t.nn.BatchNorm2d(3), img)
layer("nn.LayerNorm", lambda t: t.nn.LayerNorm(4), b)
layer("nn.GroupNorm", lambda t: t.nn.GroupNorm(1, 3), img)
layer("nn.Embedding", lambda t: t.nn.Embedding(5, 3), labels)
layer("nn.Dropout (eval)", lambda t: t.nn.Dropout(0.3), a)
layer("nn.ReLU / GELU / Tanh in nn.Sequential", lambda t: t.nn.Sequential(
    t.nn.Linear(4, 8), t.nn.ReLU(), t.nn.Linear(8, 8), t.nn.GELU(), t.nn.Tanh()), a)
layer("nn.Softmax(dim)", lambda t: t.nn.Softmax(dim=1), a)
layer("nn.Flatten", lambda t: t.nn.Flatten(), img)
layer("nn.MaxPool2d", lambda t: t.nn.MaxPool2d(2), img)
layer("nn.AvgPool2d", lambda t: t.nn.AvgPool2d(3, stride=1), img)
layer("nn.AdaptiveAvgPool2d", lambda t: t.nn.AdaptiveAvgPool2d((2, 2)), img)
layer("nn.LSTM(batch_first)", lambda t: t.nn.LSTM(4, 3, batch_first=True), seq)
layer("nn.GRU", lambda t: t.nn.GRU(4, 3, num_layers=2, batch_first=True), seq)
layer("nn.RNN", lambda t: t.nn.RNN(4, 3, batch_first=True), seq)
layer("nn.MultiheadAttention", lambda t: t.nn.MultiheadAttention(4, 2, batch_first=True),
      lambda t: (seq(t), seq(t), seq(t)))
layer("nn.TransformerEncoderLayer (eval)", lambda t: t.nn.TransformerEncoderLayer(
    4, 2, dim_feedforward=8, batch_first=True), seq)
layer("nn.Identity", lambda t: t.nn.Identity(), a)
layer("nn.Sigmoid / SiLU / LeakyReLU", lambda t: t.nn.Sequential(
    t.nn.Sigmoid(), t.nn.SiLU(), t.nn.LeakyReLU(0.2)), a)
layer("nn.CrossEntropyLoss", lambda t: t.nn.CrossEntropyLoss(), lambda t: (a(t), labels(t)))
layer("nn.MSELoss", lambda t: t.nn.MSELoss(), lambda t: (a(t), pos(t)))
layer("nn.BCEWithLogitsLoss", lambda t: t.nn.BCEWithLogitsLoss(),
      lambda t: (a(t), (pos(t) > 0.7).float()))
layer("nn.NLLLoss", lambda t: t.nn.NLLLoss(), lambda t: (a(t).log_softmax(1), labels(t)))
layer("nn.L1Loss", lambda t: t.nn.L1Loss(), lambda t: (a(t), pos(t)))


def _module_api(t):
    class Net(t.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = t.nn.Linear(4, 3)
            self.blocks = t.nn.ModuleList([t.nn.Linear(3, 3) for _ in range(2)])
            self.heads = t.nn.ModuleDict({"out": t.nn.Linear(3, 2)})
            self.register_buffer("scale", t.ones(1))

        def forward(self, x):
            x = self.fc(x)
            for blk in self.blocks:
                x = blk(x)
            return self.heads.out(x) * self.scale

    net = Net()
    return (sorted(k for k, _ in net.named_parameters()), sorted(net.state_dict()),
            sum(p.numel() for p in net.parameters()), len(list(net.modules())),
            [n for n, _ in net.named_children()], net.training, net.eval().training)


cases([
    ("nn.Module: named_parameters, state_dict, ModuleList, ModuleDict, register_buffer",
     _module_api),
    ("nn.Module.apply + nn.init.zeros_/ones_/constant_", lambda t: _apply_init(t)),
    ("nn.init.xavier_uniform_ / kaiming_normal_ / normal_ (shape)",
     lambda t: [shape_of(f(t.empty(3, 4))) for f in (
         t.nn.init.xavier_uniform_, t.nn.init.kaiming_normal_, t.nn.init.normal_)]),
    ("nn.utils.clip_grad_norm_", lambda t: _clip(t)),
    ("nn.Parameter", lambda t: t.nn.Parameter(a(t)).requires_grad),
    ("model.zero_grad()", lambda t: _zero_grad(t)),
    ("model.requires_grad_(False)", lambda t: [p.requires_grad for p in
                                               t.nn.Linear(2, 2).requires_grad_(False)
                                               .parameters()]),
    ("nn.Sequential indexing and len", lambda t: (len(t.nn.Sequential(t.nn.ReLU(),
                                                                      t.nn.Tanh())),
                                                  type(t.nn.Sequential(t.nn.ReLU(),
                                                                       t.nn.Tanh())[1])
                                                  .__name__)),
])


def _apply_init(t):
    net = t.nn.Sequential(t.nn.Linear(3, 2), t.nn.Linear(2, 2))

    def init(m):
        if isinstance(m, t.nn.Linear):
            t.nn.init.constant_(m.weight, 0.5)
            t.nn.init.zeros_(m.bias)

    net.apply(init)
    return net(t.ones(1, 3))


def _clip(t):
    w = t.tensor(A, requires_grad=True)
    (w * 10).sum().backward()
    total = t.nn.utils.clip_grad_norm_([w], max_norm=1.0)
    return total, w.grad


def _zero_grad(t):
    m = t.nn.Linear(2, 2)
    m(t.ones(1, 2)).sum().backward()
    m.zero_grad()
    return [p.grad is None for p in m.parameters()]
