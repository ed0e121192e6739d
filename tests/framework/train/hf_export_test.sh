#!/usr/bin/env bash
# ctest train.hf_export: `ablate export --format hf` of small decoder-only runs loads in
# transformers (tests/.venv: transformers 4.44.2 on Debian's torch, from scripts/setup.sh; skipped
# without) with logits equal to Ablate's within 1e-4 (hf_export_check.py):
#  - Llama: pre-norm RMSNorm, rotary, SwiGLU without biases, grouped k/v heads (4 heads, 2 k/v);
#  - Llama with attention biases on q/k/v only (o_proj's bias written as zeros) and SwiGLU biases;
#  - GPT-2: pre-norm LayerNorm, learned positions, tanh GELU, no q/k/v bias (zeros in c_attn);
#  - a text LM through a SentencePiece tokenizer: tokenizer.model, AutoTokenizer gives the run's ids;
#  - refused with the component named: sinusoidal positions; an existing folder is not written over.
#   hf_export_test.sh ABLATE_BIN
set -euo pipefail
ablate="$1"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
python="$root/tests/.venv/bin/python"
if ! reason=$("$python" -c 'import transformers, torch, safetensors' 2>&1); then
  echo "SKIP: tests/.venv lacks transformers, torch or safetensors (scripts/setup.sh installs them): ${reason##*$'\n'}"
  exit 77
fi
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT

export_and_check() {  # NAME EXPECTED_CLASS MODEL_YAML [TASK_YAML [TEXT]]
  cat > "$dir/$1.yaml" <<YAML
name: hf_$1
task: {${4:-plugin: language_model, vocab_size: 16, min_len: 6, max_len: 12, train_examples: 256, eval_examples: 8}}
model: {arch: decoder, d_model: 32, heads: 4, layers: 2, d_ff: 48, dropout: 0.0, scale_embedding: false, $3}
backend: onednn
train: {steps: 30, batch_size: 8, optimizer: {lr: 1.0e-2}}
log: {every: 10}
eval: {every: 30, batches: 1}
YAML
  "$ablate" run "$dir/$1.yaml" --out "$dir/$1" --progress quiet > /dev/null 2>&1
  "$ablate" export "$dir/$1" --format hf > "$dir/$1.log"
  grep -q "as a transformers" "$dir/$1.log" || { cat "$dir/$1.log"; exit 1; }
  "$python" "$here/hf_export_check.py" "$dir/$1/hf" "$2" ${5:+"$5"}
}

export_and_check llama LlamaForCausalLM "block: {plugin: pre_norm, norm: rms_norm}, positional_encoding: rotary,
  ffn: {plugin: swiglu, bias: false}, attention: {plugin: mha, kv_heads: 2}, qkv_bias: false, out_bias: false"
export_and_check llama_biases LlamaForCausalLM "block: {plugin: pre_norm, norm: rms_norm},
  positional_encoding: {plugin: rotary, base: 500}, ffn: swiglu, qkv_bias: true, out_bias: false"
export_and_check gpt2 GPT2LMHeadModel "block: {plugin: pre_norm, norm: layer_norm},
  positional_encoding: {plugin: learned, max_len: 32}, ffn: {plugin: gelu, approximation: tanh}, qkv_bias: false"

# a language model of text through a SentencePiece tokenizer: tokenizer.model beside the weights
head -c 8000 /usr/share/common-licenses/GPL-3 > "$dir/text.txt"  # Debian's base-files
cp "$dir/text.txt" "$dir/corpus.txt"
export_and_check sentencepiece LlamaForCausalLM "block: {plugin: pre_norm, norm: rms_norm}, positional_encoding: rotary,
  ffn: swiglu, qkv_bias: false, out_bias: false" \
  "plugin: language_model, file: $dir/corpus.txt, context: 32, tokenizer: {plugin: sentencepiece, vocab_size: 120}" "$dir/text.txt"
[ -s "$dir/sentencepiece/hf/tokenizer.model" ] && [ ! -e "$dir/llama/hf/tokenizer.model" ] || { echo "FAIL: tokenizer.model"; exit 1; }

# refused: a component without a counterpart, named; an existing folder
sed 's/positional_encoding: rotary/positional_encoding: sinusoidal/' "$dir/llama.yaml" > "$dir/sinusoidal.yaml"
"$ablate" run "$dir/sinusoidal.yaml" --out "$dir/sinusoidal" --progress quiet > /dev/null 2>&1
set +e; "$ablate" export "$dir/sinusoidal" --format hf > "$dir/refused.log" 2>&1; code=$?; set -e
[ "$code" -eq 2 ] && grep -q "sinusoidal" "$dir/refused.log" && [ ! -e "$dir/sinusoidal/hf" ] \
  || { cat "$dir/refused.log"; echo "FAIL: sinusoidal positions were not refused by name (exit $code)"; exit 1; }
set +e; "$ablate" export "$dir/llama" --format hf > "$dir/again.log" 2>&1; code=$?; set -e
[ "$code" -eq 2 ] && grep -q "not an empty folder" "$dir/again.log" || { cat "$dir/again.log"; echo "FAIL: exported over a folder"; exit 1; }
echo PASS
