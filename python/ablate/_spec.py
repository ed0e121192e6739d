# A run's resolved spec (the `resolved_spec_yaml` attribute) as flat dotted keys, the way
# `ablate compare` names arms (framework/analysis/run_summary.cpp, flatten_spec). The spec is the
# small YAML subset Ablate writes: block maps by indentation, flow maps and lists, plain or quoted
# scalars; read here so that the package needs no YAML library.


class SpecError(ValueError):
    pass


def _unquote(text):
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == "'":
        return text[1:-1].replace("''", "'")
    if len(text) >= 2 and text[0] == text[-1] == '"':
        escapes = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "/": "/"}
        out, i, body = [], 0, text[1:-1]
        while i < len(body):
            if body[i] == "\\" and i + 1 < len(body) and body[i + 1] in escapes:
                out.append(escapes[body[i + 1]])
                i += 2
            else:
                out.append(body[i])
                i += 1
        return "".join(out)
    return text


def _top_level(text):
    """(index, character) of each character of `text` outside quotes and nested brackets."""
    depth, quote = 0, None
    for i, ch in enumerate(text):
        if quote:
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif depth == 0:
            yield i, ch


def _split_flow(body):
    """The top-level comma-separated items of a flow collection's inside."""
    items, start = [], 0
    for i, ch in _top_level(body):
        if ch == ",":
            items.append(body[start:i])
            start = i + 1
    if body[start:].strip():
        items.append(body[start:])
    return [item.strip() for item in items]


def _key_value(item):
    """'key: value' split at the first ': ' outside quotes and brackets."""
    for i, ch in _top_level(item):
        if ch == ":" and (i + 1 == len(item) or item[i + 1] == " "):
            return item[:i].strip(), item[i + 1 :].strip()
    raise SpecError(f"not 'key: value': {item!r}")


class _Seq(str):
    """A list, kept as its flow text ('[0.9, 0.98]'), as `ablate compare` shows it."""


def _value(text):
    text = text.strip()
    if text.startswith("{"):
        if not text.endswith("}"):
            raise SpecError(f"unclosed flow map: {text!r}")
        return {_unquote(k): _value(v) for k, v in (_key_value(item) for item in _split_flow(text[1:-1]))}
    if text.startswith("["):
        if not text.endswith("]"):
            raise SpecError(f"unclosed flow list: {text!r}")
        return _Seq(text)
    if text in ("~", "null", ""):
        return None
    return _unquote(text)


def parse(yaml_text):
    """The spec as nested dicts; scalars as their text, lists as their flow text, null as None."""
    root = {}
    stack = [(-1, root)]  # (indent, map) of the open block maps
    pending = None  # (indent, parent map, key) of a key whose block map follows
    for number, raw in enumerate(yaml_text.splitlines(), 1):
        line = raw.rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        body = line.strip()
        if body.startswith("- "):
            raise SpecError(f"line {number}: a block list; Ablate writes lists in flow style")
        if pending and indent > pending[0]:
            child = {}
            pending[1][pending[2]] = child
            stack.append((pending[0], child))
        pending = None
        while stack and indent <= stack[-1][0]:
            stack.pop()
        if not stack:
            raise SpecError(f"line {number}: bad indentation")
        key, value = _key_value(body)
        key = _unquote(key)
        parent = stack[-1][1]
        if value == "":
            parent[key] = None
            pending = (indent, parent, key)
        else:
            parent[key] = _value(value)
    return root


def flatten(node, prefix="", out=None):
    """Dotted keys: {'model.block': 'pre_norm', 'model.block.norm': 'layer_norm', ...}."""
    out = {} if out is None else out
    for key, value in node.items():
        path = f"{prefix}.{key}" if prefix else key
        if key == "plugin" and prefix and not isinstance(value, dict):
            out[prefix] = "null" if value is None else str(value)
        elif isinstance(value, dict):
            flatten(value, path, out)
        else:
            out[path] = "null" if value is None else str(value)
    return out


def flat_spec(yaml_text):
    return flatten(parse(yaml_text))
