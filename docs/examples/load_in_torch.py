#!/usr/bin/env python3
"""docs/examples/load_in_torch.py: an Ablate model, exported with `ablate export`, in PyTorch.

  python3 docs/examples/load_in_torch.py MODEL.safetensors [--predictions PREDICTIONS.tsv] [--threads 2]

Rebuilds the model from the resolved spec in the file's metadata with bench/peer_torch.py's
transcription of Ablate's Transformer (encoder-decoder or decoder-only, pre/post-norm, learned or
sinusoidal positions, the FFNs it writes), loads every weight by its dotted name (the names and
shapes must match exactly) and prints what it loaded. With --predictions, an `ablate eval` file of
a task without text (source and reference as token ids), it scores those examples teacher-forced
and prints their mean cross entropy per target token: the `loss` of the same evaluation's
scores.json, computed by PyTorch. The weights are read with Python's `safetensors` when it is
installed, else by this file's own 20-line reader of the same layout.
"""
import argparse
import json
import os
import struct
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench"))
import peer_torch  # noqa: E402  (the PyTorch transcription of Ablate's model)


def read_safetensors(path):
    """(tensors by name, metadata, reader): with `safetensors` if installed, else the layout read here."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    metadata = header.pop("__metadata__", {})
    try:
        import safetensors
        from safetensors.torch import load_file
        return load_file(path), metadata, "safetensors " + safetensors.__version__
    except ImportError:
        pass
    tensors = {}
    for name, entry in header.items():
        if entry["dtype"] != "F32":
            raise SystemExit(f"{path}: {name} is {entry['dtype']}; this reader knows F32 (what ablate export writes)")
        begin, end = entry["data_offsets"]
        tensors[name] = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.float32).reshape(entry["shape"])
    return tensors, metadata, "load_in_torch.py's reader"


def build(path):
    """The model of an exported file with its weights, and the spec."""
    weights, metadata, reader = read_safetensors(path)
    spec = peer_torch.load_yaml(metadata["spec"])
    m = spec["model"]
    if m.get("share_embeddings") and "decoder.embedding.weight" not in weights:
        weights["decoder.embedding.weight"] = weights["encoder.embedding.weight"]  # one table, exported once
    vocab = weights["decoder.embedding.weight"].shape[0]
    longest = int(spec["task"].get("max_len", 512)) + 2  # the sinusoidal table's rows: bos + content + eos
    model = peer_torch.Transformer(m, vocab, longest)
    ours = dict(model.named_parameters())
    if set(ours) != set(weights):
        raise SystemExit(f"{path}: only in PyTorch's model {sorted(set(ours) - set(weights))}, "
                         f"only in the file {sorted(set(weights) - set(ours))}")
    with torch.no_grad():
        for name, p in ours.items():
            if tuple(p.shape) != tuple(weights[name].shape):
                raise SystemExit(f"{path}: {name} is {tuple(p.shape)} in PyTorch's model, {tuple(weights[name].shape)} in the file")
            p.copy_(weights[name])
    model.eval()
    return model, spec, metadata, reader


def ids(field):
    return [int(t) for t in field.split()] if field.strip() else []


def predictions_loss(model, path):
    """Teacher-forced mean cross entropy per target token (eos included) of an `ablate eval`
    predictions.tsv whose source and reference columns are token ids."""
    with open(path) as f:
        rows = [line.rstrip("\n").split("\t") for line in f][1:]
    srcs, refs = [ids(r[1]) for r in rows], [ids(r[2]) for r in rows]
    b, s, t = len(rows), max(len(x) for x in srcs), max(len(y) for y in refs) + 1
    src = torch.full((b, max(s, 1)), peer_torch.PAD, dtype=torch.long)
    tgt_in = torch.full((b, t), peer_torch.PAD, dtype=torch.long)
    tgt_out = torch.full((b, t), peer_torch.IGNORE, dtype=torch.long)
    for i, (x, y) in enumerate(zip(srcs, refs)):
        src[i, : len(x)] = torch.tensor(x, dtype=torch.long)
        tgt_in[i, : len(y) + 1] = torch.tensor([peer_torch.BOS] + y, dtype=torch.long)
        tgt_out[i, : len(y) + 1] = torch.tensor(y + [peer_torch.EOS], dtype=torch.long)
    src_lengths = torch.tensor([len(x) for x in srcs])
    tgt_lengths = torch.tensor([len(y) + 1 for y in refs])
    with torch.no_grad():
        logits = model(src if model.encoder is not None else None, tgt_in, src_lengths if model.encoder is not None else None,
                       tgt_lengths)
        return float(F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1),
                                     ignore_index=peer_torch.IGNORE)), b


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a file written by `ablate export RUN`")
    p.add_argument("--predictions", help="an `ablate eval` predictions.tsv of a task without text: score its examples")
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    model, spec, metadata, reader = build(args.model)
    result = {"model": args.model, "run_id": metadata.get("run_id"), "checkpoint_step": metadata.get("checkpoint_step"),
              "parameters": sum(p.numel() for p in model.parameters()), "torch": torch.__version__, "read_with": reader}
    if args.predictions:
        result["loss"], result["examples"] = predictions_loss(model, args.predictions)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
