#!/usr/bin/env python3
"""Run llama.cpp's own converter (convert_hf_to_gguf.py) on a k3-synth checkpoint.

    convert_k3.py LLAMA_CPP_SRC MODEL_DIR --outfile OUT.gguf [converter flags]

The hparams, tensor mapping, MXFP4 expert repack and BF16 trunk all run through
the converter's KimiK3ForConditionalGeneration class unmodified. This wrapper
supplies only what a Debian 12 machine lacks and what a synthetic tokenizer
cannot satisfy, each in one place below:

1. `transformers` (not packaged by Debian). The converter imports it at module
   level for three things, given here by a stand-in module:
   - AutoConfig.from_pretrained raises, as transformers does for a config whose
     model_type needs remote code (K3's "kimi_k3"); the converter then reads
     config.json itself, which is its own documented fallback.
   - AutoTokenizer.from_pretrained: without trust_remote_code it raises, as for
     K3's tiktoken tokenizer, so the converter leaves its GPT-2 path for its
     tiktoken path; with it, a stand-in built from the checkpoint's
     tiktoken.model and tokenizer_config.json offers what that path reads
     (the mergeable ranks, the special tokens, eos_id).
   - convert_slow_tokenizer.bytes_to_unicode: GPT-2's byte-to-character table.
2. torch.float8_e4m3fn / float8_e5m2 (torch 1.13, Debian's, predates them): the
   converter names them in its dtype tables at import. They are aliased to
   torch.uint8; no K3 tensor has those dtypes, so no data goes through them.
3. The pre-tokenizer check: the converter identifies a tokenizer by hashing its
   encoding of a fixed text, which a synthetic vocabulary can never match. The
   answer K3's real tokenizer gets there is "kimi-k2" (K3 shares K2's
   tokenizer), so that is returned; the converter then writes the vocabulary
   as it does for K3: tokenizer model "gpt2", pre "kimi-k2", the token list,
   types and BPE merges, through gguf-py's writer.
"""
from __future__ import annotations

import base64
import json
import sys
import types
from pathlib import Path


def bytes_to_unicode() -> dict[int, str]:
    # GPT-2's table: printable Latin-1 bytes stand for themselves, the other
    # bytes are moved to code points 256 and up, in byte order.
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table = {b: chr(b) for b in keep}
    shift = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + shift)
            shift += 1
    return table


class SyntheticTikToken:
    """What the converter's tiktoken path reads from K3's tokenizer object."""

    def __init__(self, model_dir: Path):
        ranks: dict[bytes, int] = {}
        for line in (model_dir / "tiktoken.model").read_text(encoding="ascii").splitlines():
            if line.strip():
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
        self.model = types.SimpleNamespace(_mergeable_ranks=ranks)
        config = json.loads((model_dir / "config.json").read_text(encoding="utf-8"))
        vocab_size = config.get("text_config", config)["vocab_size"]
        tok_config = json.loads((model_dir / "tokenizer_config.json").read_text(encoding="utf-8"))
        named = {int(i): t["content"] for i, t in tok_config.get("added_tokens_decoder", {}).items()}
        # K3's tokenizer names every id past the ranked ones, unnamed ones as reserved.
        self.special_tokens = {named.get(i, f"<|reserved_token_{i}|>"): i for i in range(len(ranks), vocab_size)}
        eos = tok_config.get("eos_token")
        eos = eos.get("content") if isinstance(eos, dict) else eos
        self.eos_id = self.special_tokens.get(eos or "[EOS]", config.get("eos_token_id"))


def install_transformers_stand_in() -> None:
    class AutoConfig:
        @staticmethod
        def from_pretrained(path, trust_remote_code=False, **_):
            raise ValueError(f"{path}: model type needs remote code (stand-in AutoConfig: read config.json)")

    class AutoTokenizer:
        @staticmethod
        def from_pretrained(path, trust_remote_code=False, **_):
            if not trust_remote_code:
                raise ValueError(f"{path}: tokenizer needs remote code (tiktoken)")
            return SyntheticTikToken(Path(path))

    transformers = types.ModuleType("transformers")
    transformers.AutoConfig = AutoConfig
    transformers.AutoTokenizer = AutoTokenizer
    slow = types.ModuleType("transformers.convert_slow_tokenizer")
    slow.bytes_to_unicode = bytes_to_unicode
    transformers.convert_slow_tokenizer = slow
    sys.modules["transformers"] = transformers
    sys.modules["transformers.convert_slow_tokenizer"] = slow


def main() -> None:
    if len(sys.argv) < 3 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        sys.exit(0 if len(sys.argv) > 1 and sys.argv[1] in ("-h", "--help") else 2)
    src = Path(sys.argv[1]).resolve()
    if not (src / "convert_hf_to_gguf.py").is_file():
        print(f"convert_k3.py: {src}: no convert_hf_to_gguf.py (give llama.cpp's source tree)", file=sys.stderr)
        sys.exit(2)

    import torch

    for name in ("float8_e4m3fn", "float8_e5m2"):
        if not hasattr(torch, name):
            setattr(torch, name, torch.uint8)
    install_transformers_stand_in()

    sys.path.insert(0, str(src))
    sys.argv = [str(src / "convert_hf_to_gguf.py")] + sys.argv[2:]
    import convert_hf_to_gguf
    from conversion.kimi_k3 import KimiK3Model

    KimiK3Model.get_vocab_base_pre = lambda self, tokenizer: "kimi-k2"
    convert_hf_to_gguf.main()


if __name__ == "__main__":
    main()
