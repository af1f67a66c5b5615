# AG+GEMM variants on 2 GPUs: the baselines, NCCL collective pipelines, the copy-engine backend.
. benchmarks/gpu_env.sh || exit 1
f=examples/multidevice/ag_matmul_by_device.mlir
hir-opt -p 'stream-lowering{backend=copy-engine}' $f > /tmp/ce.mlir && timeout 100 python3 -m torch.distributed.run --nproc-per-node 2 -m hir.tools.hir_run /tmp/ce.mlir --reference $f --device cuda 2>&1 | grep -E "check|rror" | head -5
cd benchmarks && timeout 420 python3 -m torch.distributed.run --nproc-per-node 2 ag_gemm.py --reps 20 --warmup 5 --profile $OUT \
  --variants "stream-lowering{backend=copy-engine}:1,stream-lowering{backend=copy-engine}:2,stream-lowering:2,stream-lowering:2:chunks=2" 2>&1 | grep -v Warn | tail -45 | tee $OUT/ag_gemm.log
