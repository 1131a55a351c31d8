"""torch.distributed (NCCL) allReduce and broadcast bus bandwidth, measured as `bench collectives`
measures cuda-kernels' Communicator: float32 buffers, allReduce (sum) and broadcast (from rank 0) in
place, CUDA events around `iters` queued operations, median of `reps` samples per rank, the maximum
over ranks. Bus bandwidth as nccl-tests defines it. Run under torchrun:

    python3 -m torch.distributed.run --nproc-per-node 2 torch_collectives.py --sizes 1048576,... --reps 10

Rank 0 prints one `CK-BENCH <json>` line per measurement. CK_HOSTID_PER_RANK=1 gives each rank its own
NCCL_HOSTID so that ranks can share one GPU (a functional check only, never a speed figure).
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument("--sizes", required=True)
ap.add_argument("--reps", type=int, default=10)
args = ap.parse_args()

rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
if os.environ.get("CK_HOSTID_PER_RANK"):
    os.environ["NCCL_HOSTID"] = f"ck-rank-{rank}"
device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count())
torch.cuda.set_device(device)
dist.init_process_group("nccl", device_id=device)


def max_over_ranks(v):
    t = torch.tensor([v], dtype=torch.float64, device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


for op in ("allreduce", "broadcast"):
    for nbytes in (int(s) for s in args.sizes.split(",")):
        n = nbytes // 4
        # Timed on zeros (sums of zeros stay zeros however often they run); checked once on rank + 1.
        a = torch.zeros((n,), dtype=torch.float32, device=device)
        # As lib/bench/dist-rank.ts: enough calls per sample that the small ones are timed well.
        iters = 50 if nbytes <= 1 << 20 else 20 if nbytes <= 4 << 20 else 5 if nbytes <= 64 << 20 else 2

        def run():
            if op == "allreduce":
                dist.all_reduce(a, op=dist.ReduceOp.SUM)
            else:
                dist.broadcast(a, src=0)

        for _ in range(2 * iters):
            run()
        torch.cuda.synchronize()
        samples, host = [], []  # host: ms of the calling thread per call
        for _ in range(args.reps):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            t = time.perf_counter()
            for _ in range(iters):
                run()
            host.append((time.perf_counter() - t) * 1e3 / iters)
            e.record()
            e.synchronize()
            samples.append(s.elapsed_time(e) / iters)
        a.fill_(float(rank + 1))
        run()
        torch.cuda.synchronize()
        want = size * (size + 1) / 2 if op == "allreduce" else 1.0
        ok = all(a[i].item() == want for i in (0, n // 2, n - 1))
        ms = max_over_ranks(statistics.median(samples))
        ok_all = max_over_ranks(0.0 if ok else 1.0) == 0.0
        host_ms = max_over_ranks(statistics.median(host))
        alg = nbytes / (ms * 1e-3) / 1e9
        bus = alg * 2 * (size - 1) / size if op == "allreduce" else alg
        if rank == 0:
            print("CK-BENCH " + json.dumps({
                "op": op, "bytes": nbytes, "ms": ms, "busBw": bus, "check": "ok" if ok_all else "fail",
                "spread": [min(samples), max(samples)], "reps": args.reps, "iters": iters,
                "hostMs": host_ms,
                "torch": torch.__version__, "nccl": ".".join(map(str, torch.cuda.nccl.version())),
            }), flush=True)

dist.destroy_process_group()
