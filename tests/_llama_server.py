"""A real OpenAI-compatible server for the tests: llama.cpp's, from the ``llama-cpp-python`` package
(PyPI; the ``serve`` extra), serving the package's tiny GPT-2 test model converted to GGUF.

* :func:`gpt2_to_gguf` writes a GGUF file from a :func:`llmsurrogate.testing.build_model` GPT-2
  folder with the ``gguf`` package's writer (float32, the tensor layout of llama.cpp's own
  ``convert_hf_to_gguf.py`` for GPT-2). The tokenizer is written as llama.cpp's ``gpt2`` BPE with
  the ``gpt-2`` pre-tokenizer: our tokenizer is byte-level BPE with GPT-2's split regex, which is
  exactly that. (llama.cpp's converter identifies pre-tokenizers by hashing the tokens of a probe
  text and cannot know a tokenizer trained here; the tests check instead that the server
  tokenizes test prompts exactly as the Hugging Face tokenizer does.) ``add_bos`` is on: the
  server then puts ``<|endoftext|>`` (id 0) first, and the transformers side of a comparison is
  given the same token (llama-cpp-python's echoed prompt log-probabilities are aligned only when
  a BOS token leads).
* :class:`LlamaServer` runs ``python -m llama_cpp.server`` on a free port of 127.0.0.1 (start,
  readiness and stop: :class:`_server.ServerProcess`).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from _server import ServerProcess

MODEL_ALIAS = "tiny-gpt2"


def llama_cpp_available() -> bool:
    try:
        import llama_cpp  # noqa: F401
        import llama_cpp.server  # noqa: F401
    except Exception:  # noqa: BLE001 - any import failure means: no server
        return False
    return True


def gpt2_to_gguf(model_dir, out_path) -> Path:
    """Write ``out_path`` (GGUF, float32) from a local GPT-2 ``save_pretrained`` folder."""
    import gguf
    import torch
    import transformers

    model_dir, out_path = Path(model_dir), Path(out_path)
    cfg = json.loads((model_dir / "config.json").read_text())
    model = transformers.GPT2LMHeadModel.from_pretrained(model_dir, local_files_only=True)
    tok_json = json.loads((model_dir / "tokenizer.json").read_text())
    w = gguf.GGUFWriter(out_path, "gpt2")
    n_embd, n_layer = cfg["n_embd"], cfg["n_layer"]
    w.add_name("llmsurrogate-tiny-gpt2")
    w.add_block_count(n_layer)
    w.add_context_length(cfg["n_positions"])
    w.add_embedding_length(n_embd)
    w.add_feed_forward_length(cfg.get("n_inner") or 4 * n_embd)
    w.add_head_count(cfg["n_head"])
    w.add_layer_norm_eps(cfg["layer_norm_epsilon"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)

    # tokenizer: ids in order, byte-level token strings as in tokenizer.json
    vocab = dict(tok_json["model"]["vocab"])
    for a in tok_json["added_tokens"]:
        vocab[a["content"]] = a["id"]
    n_vocab = cfg["vocab_size"]
    by_id = {i: t for t, i in vocab.items()}
    tokens = [by_id[i] for i in range(n_vocab)]
    special = {a["id"] for a in tok_json["added_tokens"] if a.get("special")}
    types = [gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL for i in range(n_vocab)]
    merges = [m if isinstance(m, str) else " ".join(m) for m in tok_json["model"]["merges"]]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(cfg["bos_token_id"])
    w.add_eos_token_id(cfg["eos_token_id"])
    w.add_pad_token_id(cfg["pad_token_id"])
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    template = model_dir / "chat_template.jinja"
    if template.exists():  # the server's chat endpoint renders with it (ChatML for build_model's default)
        w.add_chat_template(template.read_text())

    sd = {k: v.detach().to(torch.float32).numpy() for k, v in model.state_dict().items()}
    conv1d = (".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight")
    names = {"ln_1": "attn_norm", "attn.c_attn": "attn_qkv", "attn.c_proj": "attn_output", "ln_2": "ffn_norm",
             "mlp.c_fc": "ffn_up", "mlp.c_proj": "ffn_down"}
    w.add_tensor("token_embd.weight", sd["transformer.wte.weight"])
    w.add_tensor("position_embd.weight", sd["transformer.wpe.weight"])
    for b in range(n_layer):
        for hf, gg in names.items():
            for part in ("weight", "bias"):
                name = f"transformer.h.{b}.{hf}.{part}"
                arr = sd[name]
                if name.endswith(conv1d):
                    arr = np.ascontiguousarray(arr.T)  # Conv1D stores (in, out)
                w.add_tensor(f"blk.{b}.{gg}.{part}", arr)
    w.add_tensor("output_norm.weight", sd["transformer.ln_f.weight"])
    w.add_tensor("output_norm.bias", sd["transformer.ln_f.bias"])
    w.add_tensor("output.weight", np.ascontiguousarray(sd["lm_head.weight"]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return out_path


class LlamaServer(ServerProcess):
    """``python -m llama_cpp.server`` on 127.0.0.1 serving ``gguf_path`` as :data:`MODEL_ALIAS`."""

    name = "llama_cpp.server"

    def __init__(self, gguf_path, *, n_ctx: int = 1024, threads: int = 1, log_path=None, startup_timeout: float = 120.0):
        self.gguf_path = Path(gguf_path)
        super().__init__(log_path=Path(log_path) if log_path else self.gguf_path.with_suffix(".server.log"),
                         startup_timeout=startup_timeout)
        self.n_ctx, self.threads = n_ctx, threads

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.gguf_path), "--model_alias", MODEL_ALIAS,
                "--host", "127.0.0.1", "--port", str(self.port), "--n_ctx", str(self.n_ctx),
                "--n_threads", str(self.threads), "--n_threads_batch", str(self.threads), "--logits_all", "true",
                "--seed", "0", "--n_gpu_layers", "0", "--verbose", "false"]

    def environment(self) -> dict[str, str]:
        env = super().environment()
        if "/lib/R/lib" in env.get("LD_LIBRARY_PATH", ""):
            # started from R (reticulate): R's library path would make this Python child load the
            # system's libpython instead of its own
            env.pop("LD_LIBRARY_PATH")
        return env
