# Source this on a GPU machine that has torch but not this project's pure-Python dependencies:
# installs the wheels carried in .whl/ (xdsl, filecheck, lit, ...), makes `hir` importable from this
# checkout, and puts hir-opt / hir-run / filecheck / lit on PATH. See docs/benchmarks.md.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || return 1
ln -sfn "$PWD" /tmp/site/hir
mkdir -p /tmp/bin
for tool in hir_opt:hir-opt hir_run:hir-run; do
  printf '#!/bin/sh\nexec python3 -m hir.tools.%s "$@"\n' "${tool%%:*}" > "/tmp/bin/${tool##*:}"
done
printf '#!/bin/sh\nexec python3 -m filecheck "$@"\n' > /tmp/bin/filecheck
printf '#!/bin/sh\nexec python3 -m lit.main "$@"\n' > /tmp/bin/lit
chmod +x /tmp/bin/*
export PYTHONPATH=/tmp/site PATH=/tmp/bin:$PATH
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
