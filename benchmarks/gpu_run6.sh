# AG+GEMM after moving the copy-engine barrier off the critical path.
. benchmarks/gpu_env.sh || exit 1
v='stream-lowering{backend=copy-engine}:1,stream-lowering{backend=copy-engine chunks=1}:1,stream-lowering{backend=copy-engine}:2'
cd benchmarks && timeout 200 python3 -m torch.distributed.run --nproc-per-node 2 ag_gemm.py --reps 50 --warmup 10 --profile $OUT --variants "$v" 2>&1 | grep -v -i warn | tail -30 > $OUT/ag_gemm.log; cat $OUT/ag_gemm.log
