#!/usr/bin/env bash
# The GPU session's two halves (docs/gpu-backend.md, "Checking it on a GPU"): `pack` runs here and
# puts a Release build with the cudnn plugin and the Debian libraries it needs into .gpu/ (one
# archive, small enough for the device tool's 64 MiB); `unpack` runs on the GPU machine, which has
# CUDA and cuDNN but no apt, and prints the environment to source before running the build there.
#
#   scripts/gpu_session.sh pack [BUILD_DIR]      # here, after building bin/ablate, the plugins and tests
#                                                # (configured with -DABLATE_ONEDNN_NATIVE=OFF: the GPU
#                                                # machine's CPU may lack this one's instructions)
#   scripts/gpu_session.sh pack-before BUILD_DIR # optional: another build's bin/ablate, libablate and
#                                                # plugins (an older commit's, for a before/after benchmark;
#                                                # `pack` keeps it: delete .gpu/before.tar.xz when done)
#   eval "$(scripts/gpu_session.sh unpack)"       # there, from the repository root: build/ + LD_LIBRARY_PATH
#   scripts/gpu_session.sh check OUT [STEP...]   # there, after unpack: the checklist's steps, one log each
#                                                # in OUT (steps: parity gpu_tests train profile bench
#                                                # variants timeline; default: parity gpu_tests train profile)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PACK="$ROOT/.gpu"

case "${1:-}" in
pack)
  build="${2:-build}"
  cd "$ROOT"
  # (a "before" archive from pack-before stays: pack may come after it)
  rm -rf "$PACK/deps" "$PACK/build.tar.xz" "$PACK/deps.tar.xz" && mkdir -p "$PACK/deps"
  # What runs there: the orchestrator, its core library and plugins, and the GPU-relevant tests.
  files=(bin/ablate lib)
  for t in backend_parity_tests backend_cudnn_gpu_tests; do
    [ -x "$build/bin/$t" ] && files+=("bin/$t")
  done
  # The shared libraries from Debian those files need, except glibc's and the C++ runtime (the GPU
  # machine has newer ones), CUDA's (its own toolkit and cuDNN are used) and the build's own.
  find "${files[@]/#/$build/}" -type f \( -name '*.so*' -o -perm -u+x \) -print0 |
    xargs -0 ldd 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    grep -Ev '/(ld-linux[^/]*|libc|libm|libpthread|libdl|librt|libresolv|libutil|libanl|libnss_[a-z]*|libstdc\+\+|libgcc_s)\.so' |
    grep -Ev "^(/usr/local/cuda|$ROOT/)" | while read -r lib; do cp -L "$lib" "$PACK/deps/"; done
  # The timeline tracer's CUPTI (bench/gpu_timeline): the GPU machine's toolkit may lack it.
  if [ -f "$build/lib/libablate_gpu_timeline.so" ]; then
    ldd "$build/lib/libablate_gpu_timeline.so" | awk '$1 ~ /^libcupti/ && $3 ~ /^\// {print $3}' |
      while read -r lib; do cp -L "$lib" "$PACK/deps/"; done
  fi
  tar -C "$build" -cf - "${files[@]}" | xz -T2 -6 > "$PACK/build.tar.xz"
  tar -C "$PACK" -cf - deps | xz -T2 -6 > "$PACK/deps.tar.xz"
  rm -rf "$PACK/deps"
  du -sh "$PACK"/*.tar.xz >&2
  echo "gpu_session: carry .gpu (ignored by git) and run 'eval \"\$(scripts/gpu_session.sh unpack)\"' there" >&2
  ;;
pack-before)
  build="${2:?pack-before needs the directory of the other build}"
  mkdir -p "$PACK"
  tar -C "$build" -cf - bin/ablate $(cd "$build" && ls lib/libablate.so* lib/ablate/plugins/*.so lib/ablate/plugins/*/*.so) |
    xz -T2 -6 > "$PACK/before.tar.xz"
  du -sh "$PACK/before.tar.xz" >&2
  ;;
unpack)
  cd "$ROOT"
  mkdir -p build "$PACK"
  xz -dc "$PACK/build.tar.xz" | tar -C build -xf -
  if [ -f "$PACK/before.tar.xz" ]; then  # the benchmark's "before" build
    mkdir -p "$PACK/before" && xz -dc "$PACK/before.tar.xz" | tar -C "$PACK/before" -xf -
  fi
  xz -dc "$PACK/deps.tar.xz" | tar -C "$PACK" -xf -
  # Where the machine has a library itself, its own (newer) copy serves; ours only fill the gaps.
  for lib in "$PACK"/deps/*; do
    if ldconfig -p | grep -q "^[[:space:]]*$(basename "$lib") "; then rm "$lib"; fi
  done
  # cuDNN: the toolkit's if it has one, else the one PyTorch ships (nvidia-cudnn-cu13).
  cudnn="$(dirname "$( (ls /usr/local/cuda/lib64/libcudnn.so.9 2>/dev/null; find / -xdev -name 'libcudnn.so.9' 2>/dev/null) | head -1)")"
  echo "export LD_LIBRARY_PATH=$ROOT/build/lib:$PACK/deps:$cudnn:/usr/local/cuda/lib64\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
  ;;
check)
  out="${2:?check needs an output folder}"
  shift 2
  steps=("$@")
  [ ${#steps[@]} -eq 0 ] && steps=(parity gpu_tests train profile)
  cd "$ROOT"
  runs="$(mktemp -d)"  # run directories: C's checkpoint is gigabytes, keep it out of OUT
  mkdir -p "$out"
  export ABLATE_REQUIRE_BACKENDS=cudnn OMP_WAIT_POLICY=PASSIVE
  # One step: its own log and time limit, and its exit status in OUT/summary.txt; a failing step
  # does not stop the next.
  step() {
    local name="$1" limit="$2"
    shift 2
    local t0=$SECONDS rc=0
    timeout "$limit" "$@" >"$out/$name.log" 2>&1 || rc=$?
    echo "$name rc=$rc $((SECONDS - t0))s" | tee -a "$out/summary.txt"
  }
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$out/summary.txt" 2>&1 || true
  for s in "${steps[@]}"; do
    case "$s" in
    parity) step parity 420 build/bin/backend_parity_tests --gtest_filter='*cudnn*' ;;
    gpu_tests) step gpu_tests 240 build/bin/backend_cudnn_gpu_tests ;;
    train)
      step train_quickstart 120 build/bin/ablate run experiments/quickstart.yaml --set backend.plugin=cudnn \
        --progress lines -o "$runs/quickstart"
      step train_B_bf16 120 build/bin/ablate run bench/configs/B_decoder_lm.yaml --set backend.plugin=cudnn \
        --set precision=bf16 --set train.steps=200 --progress lines -o "$runs/B_bf16"
      # The attention features only the unfused path runs (grouped k/v heads, softcap, ALiBi, qk
      # norm), in f32 on the GPU and on this machine's CPU: the two loss columns should agree.
      variant=(--set model.attention.plugin=mha --set model.attention.kv_heads=2 --set model.attention.logit_softcap=30
        --set model.attention.qk_norm=rms_norm --set model.positional_encoding=alibi --set train.steps=30 --set log.every=5
        --progress lines)
      for be in cudnn onednn; do
        step "train_B_variant_$be" 180 build/bin/ablate run bench/configs/B_decoder_lm.yaml --set backend.plugin=$be \
          "${variant[@]}" -o "$runs/B_variant_$be"
      done
      # The optimizers written with backend ops (Lion's sign by compare, Muon's Newton-Schulz
      # matmuls, Adafactor's factored means), f32, 10 steps each logged, on the GPU and the CPU:
      # the two loss columns of each should agree.
      for opt in lion muon adafactor; do
        for be in cudnn onednn; do
          threads=()
          [ "$be" = onednn ] && threads=(--set backend.threads=16)
          step "train_B_${opt}_$be" 120 build/bin/ablate run bench/configs/B_decoder_lm.yaml --set backend.plugin=$be \
            "${threads[@]}" --set train.optimizer.plugin=$opt --set train.steps=10 --set log.every=1 --progress lines \
            -o "$runs/B_${opt}_$be"
        done
      done ;;
    profile) step profile_C 180 build/bin/ablate run bench/configs/C_gpu_large.yaml --profile \
        --progress lines -o "$runs/C_profile" ;;
    variants)  # where C's step goes, by difference: tokens/s (run.h5, after the first log row) of C as
      # is and with one change each, two rounds alternating, one line each in OUT/variants.txt
      for round in 1 2; do
        for v in base: nodrop:model.dropout=0 layers6:model.layers=6 unfused:backend.fused_attention=false; do
          name=${v%%:*} set=${v#*:}
          step "C_$name$round" 120 build/bin/ablate run bench/configs/C_gpu_large.yaml --set train.steps=40 \
            --set log.every=10 ${set:+--set "$set"} --progress quiet -o "$runs/C_$name$round"
          python3 -c "import h5py, sys; f = h5py.File(sys.argv[1]); s = f['metrics/train/step'][:]; \
e = f['metrics/train/elapsed_s'][:]; print(sys.argv[2], round((s[-1] - s[0]) * 8192 / (e[-1] - e[0])), 'tokens/s')" \
            "$runs/C_$name$round/run.h5" "round $round $name" >>"$out/variants.txt" 2>&1 || true
        done
      done ;;
    timeline)  # the GPU's timeline of B-gpu and C-gpu (bench/gpu_timeline): per step, how long the GPU was
      # busy and idle and how much of the idle time the host caused; the raw TSV compressed in OUT
      for cfg in "B_gpu:B_decoder_lm --set backend.plugin=cudnn --set precision=bf16 --set log.stats=false" \
        "C_gpu:C_gpu_large"; do
        name=${cfg%%:*} args=(${cfg#*:})
        step "timeline_$name" 180 env CUDA_INJECTION64_PATH="$ROOT/build/lib/libablate_gpu_timeline.so" \
          ABLATE_GPU_TIMELINE="$runs/$name.tsv" build/bin/ablate run "bench/configs/${args[0]}.yaml" "${args[@]:1}" \
          --set train.steps=30 --set log.every=10 --progress quiet -o "$runs/timeline_$name"
        step "timeline_${name}_analysis" 60 python3 bench/gpu_timeline/analyse.py "$runs/$name.tsv"
        xz -T4 -c "$runs/$name.tsv" >"$out/timeline_$name.tsv.xz" || true
      done ;;
    bench)
      before=()  # with a packed "before" build, each round runs it too (bench/compare.py --ablate-before)
      [ -x "$PACK/before/bin/ablate" ] && before=(--ablate-before "$PACK/before/bin/ablate")
      step bench 540 python3 bench/compare.py --ablate-bin build/bin/ablate --gpu --torch-python python3 \
        --configs "${BENCH_CONFIGS:-B-gpu,C-gpu}" --rounds "${BENCH_ROUNDS:-2}" "${before[@]}" ;;
    *) echo "gpu_session: unknown step '$s' (parity gpu_tests train profile bench variants timeline)" >&2; exit 2 ;;
    esac
  done
  ;;
*)
  echo "usage: $0 pack [BUILD_DIR] | pack-before BUILD_DIR | unpack | check OUT [STEP...]" >&2
  exit 2
  ;;
esac
