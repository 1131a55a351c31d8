"""PyTorch's time for one full-batch training epoch of the MLP benchmark's nets, on the same GPU.

The same computation as cuda-kernels' Mlp: sigmoid layers, E = ½Σ(y − t)² (a sum, not a mean),
SGD with momentum (torch's v = αv + g; W −= ηv is ΔW = −η·g + α·ΔW_prev), float32, TF32 off.
Timed with CUDA events over whole epochs (forward, backward, step), median of 10 after 3 warm-ups.
Prints one JSON line per net.
"""
import json
import statistics
import sys

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")

NETS = [([784, 1024, 1024, 10], 60000), ([4096, 4096, 4096, 4096], 16384)]
if "--quick" in sys.argv:
    NETS = [([784, 256, 10], 4096), ([512, 512, 512], 2048)]

dev = torch.device("cuda")
for layers, P in NETS:
    torch.manual_seed(0)
    mods = []
    for a, b in zip(layers[:-1], layers[1:]):
        mods += [torch.nn.Linear(a, b), torch.nn.Sigmoid()]
    net = torch.nn.Sequential(*mods).to(dev)
    opt = torch.optim.SGD(net.parameters(), lr=1e-6, momentum=0.9)
    X = torch.rand(P, layers[0], device=dev) * 2 - 1
    T = torch.rand(P, layers[-1], device=dev)

    def epoch():
        opt.zero_grad(set_to_none=False)
        loss = 0.5 * ((net(X) - T) ** 2).sum()
        loss.backward()
        opt.step()

    for _ in range(3):
        epoch()
    times = []
    for _ in range(10):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        epoch()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    ms = statistics.median(times)
    flops = 6 * P * sum(a * b for a, b in zip(layers[:-1], layers[1:]))
    print(json.dumps({"layers": layers, "patterns": P, "ms": ms, "tflops": flops / ms / 1e9,
                      "min": min(times), "max": max(times), "torch": torch.__version__}))
