# hf_export_test.sh's check of one `ablate export --format hf` folder: transformers'
# AutoModelForCausalLM loads it (the class named), and its logits on ablate_logits.safetensors'
# input ids equal Ablate's at every position of every example within 1e-4 (f32). With TEXT (the
# run's SentencePiece-tokenized text file): transformers' AutoTokenizer (use_fast=False) gives bos +
# the ids Python's sentencepiece gives with the run's model, for every line of the file.
#   hf_export_check.py DIR EXPECTED_CLASS [TEXT]
import sys
import warnings

import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

warnings.filterwarnings("ignore")
folder, expected = sys.argv[1], sys.argv[2]
model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float32).eval()
assert type(model).__name__ == expected, (type(model).__name__, expected)
check = load_file(f"{folder}/ablate_logits.safetensors")
with torch.no_grad():
    logits = model(input_ids=check["input_ids"]).logits
worst, positions = 0.0, 0
for b, n in enumerate(check["lengths"].tolist()):  # a causal model's logits before the padding
    worst = max(worst, (logits[b, :n] - check["logits"][b, :n]).abs().max().item())
    positions += n
scale = check["logits"].abs().max().item()
print(f"{folder}: {expected}, {positions} positions, max |logit - Ablate's| {worst:.2e} (logits up to {scale:.2f})")
assert positions > 0 and scale > 0.1, "nothing to compare"
if worst > 1e-4:
    sys.exit(1)
if len(sys.argv) > 3:
    import sentencepiece
    from transformers import AutoTokenizer

    # The slow (SentencePiece) tokenizer: transformers' conversion to a fast one keeps each space of
    # a run of spaces, which the run's model folds into one (docs/training.md says so).
    tokenizer = AutoTokenizer.from_pretrained(folder, use_fast=False)
    sp = sentencepiece.SentencePieceProcessor(model_file=f"{folder}/tokenizer.model")
    lines = [line for line in open(sys.argv[3], encoding="utf-8").read().splitlines() if line.strip()]
    for line in lines:
        got, want = tokenizer(line)["input_ids"], [1] + sp.encode(line)
        assert got == want, (line, got, want)
    print(f"{folder}: {type(tokenizer).__name__} gives the run's ids for all {len(lines)} lines")
