# AG+GEMM final numbers: the copy-engine lowering (automatic push chunks) against the baselines.
. benchmarks/gpu_env.sh || exit 1
v='stream-lowering{backend=copy-engine chunks=1}:1,stream-lowering{backend=copy-engine}:1,stream-lowering{backend=copy-engine}:2,stream-lowering:2:chunks=2'
cd benchmarks && timeout 300 python3 -m torch.distributed.run --nproc-per-node 2 ag_gemm.py --reps 50 --warmup 10 --profile $OUT --profile-variant 2 --variants "$v" 2>&1 | grep -v -i warn | tail -34 > $OUT/ag_gemm.log; cat $OUT/ag_gemm.log
