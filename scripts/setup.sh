#!/usr/bin/env bash
# Installs the Debian packages Ablate's build and tests need, and only those that are missing
# (apt-get; as root directly or through sudo), then the PyPI packages of five agreement tests
# into tests/.venv (as the calling user). Idempotent.
set -euo pipefail

# What the current build and tests use. Keep in sync with README "Dependencies".
PACKAGES=(
  cmake ninja-build g++ make pkg-config
  clang-format       # scripts/test.sh checks the house style (.clang-format) first
  libboost-dev libboost-program-options-dev
  libgtest-dev libgmock-dev
  python3            # tests check JSON output with Debian's /usr/bin/python3
  python3-venv       # tests/.venv (below)
  libdnnl-dev ocl-icd-opencl-dev   # oneDNN 2.6 (its CMake config needs OpenCL headers)
  libyaml-cpp-dev    # yaml-cpp 0.7: experiment specs (framework/spec/)
  libhdf5-dev hdf5-tools             # HDF5 1.10 C/C++ API: run files (framework/results/)
  libcairo2-dev                      # PNG/SVG figures rendered in-process (framework/analysis/)
  libsentencepiece-dev               # SentencePiece 0.1.97: the subword tokenizer plugin (plugins/tokenizer_sentencepiece)
  python3-h5py python3-numpy         # tests read run files the way researchers do, with h5py
  python3-pandas python3-setuptools python3-wheel python3-pip  # the `ablate` Python package (python/): pip-installed, tested
  python3-scipy                      # analysis.scaling_fit: the power-law fit against scipy's curve_fit
  python3-torch libopenblas0-openmp python3-yaml  # bench.peer_agreement: the PyTorch peer (bench/), on the OpenMP OpenBLAS
  slurmctld slurmd slurm-client munge  # Slurm 22.05: `ablate sweep --executor slurm` test on a loopback cluster
  libsword-utils sword-text-web sword-text-sparv  # Bible en-es (scripts/prepare_bible_en_es.sh): the paper ablations' CI checks
  chromium                           # report.html is opened in a real headless browser in a test
  strace                             # tests/faults: SIGKILL at an exact system call (fault injection)
)

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Not Debian packages: sacrebleu (ctest plugins.translation_sacrebleu: Ablate's BLEU against it),
# safetensors (ctest docs.load_in_torch reads `ablate export`'s file with it), sentencepiece
# (ctest plugins.sentencepiece_agreement: the tokenizer plugin's ids against it), tensorboard
# (ctest results.tensorboard reads log.tensorboard's event files with it) and transformers (ctest
# train.hf_export loads `ablate export --format hf`; 4.44 is the last to run on Debian's torch 1.13),
# pinned, into a
# virtual environment that also sees Debian's packages (torch, numpy, h5py, yaml). Without PyPI
# those tests skip, saying so.
PYPI_PACKAGES=(sacrebleu==2.6.0 safetensors==0.8.0 sentencepiece==0.2.0 tensorboard==2.18.0 transformers==4.44.2)
VENV="$(cd "$(dirname "$0")/.." && pwd)/tests/.venv"
python_packages() {
  if "$VENV/bin/python" -c 'import sacrebleu, safetensors, sentencepiece, tensorboard, transformers' 2>/dev/null; then
    echo "setup: ${PYPI_PACKAGES[*]} are installed in tests/.venv"
    return
  fi
  echo "setup: installing ${PYPI_PACKAGES[*]} from PyPI into tests/.venv"
  if ! { /usr/bin/python3 -m venv --system-site-packages "$VENV" &&
         "$VENV/bin/pip" install -q --disable-pip-version-check "${PYPI_PACKAGES[@]}"; }; then
    echo "setup: warning: could not install ${PYPI_PACKAGES[*]} (no PyPI here?): the sacrebleu," \
         "safetensors, sentencepiece, tensorboard and transformers checks will skip" >&2
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#PACKAGES[@]} required Debian packages are installed"
  python_packages
  exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1; then
  SUDO=(sudo)
else
  echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
  exit 1
fi

echo "setup: installing ${#missing[@]} missing package(s): ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -q
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
python_packages
echo "setup: done"
