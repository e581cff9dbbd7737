"""The `lookup` environment: `search` and `open` over a local knowledge base (a JSONL, CSV or
Parquet file of documents), ranked with BM25 (`bm25s`)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..errors import DataError
from .base import Environment, ToolError, ToolSettings, clip, quoted

SNIPPET_CHARS = 120  # of a document's text, shown by `search`
COLUMN_FIELDS = ("corpus_id_column", "corpus_title_column", "corpus_text_column")


@dataclass(frozen=True)
class Document:
    """One document of the knowledge base (its cells as text)."""

    id: str
    title: str
    text: str


def _stem(words: list[str]) -> list[str]:
    """A light stemmer (plural -s), so "festivals" finds "festival"."""
    return [w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words]


def _tokens(texts: list[str], return_ids: bool):
    import bm25s

    return bm25s.tokenize(texts, stopwords="en_plus", stemmer=_stem, return_ids=return_ids,
                          show_progress=False)  # fmt: skip


class Corpus:
    """The documents of one file and their BM25 index."""

    def __init__(self, documents: list[Document]):
        import bm25s

        self.documents = tuple(documents)
        self.by_id = {document.id: document for document in documents}
        self.index = bm25s.BM25()
        texts = [f"{d.title}\n{d.title}\n{d.text}" for d in documents]  # the title counts twice
        self.index.index(_tokens(texts, return_ids=True), show_progress=False)

    def search(self, query: str, k: int) -> list[Document]:
        """The `k` best documents for `query` that share at least one word with it."""
        tokens = _tokens([query], return_ids=False)
        if not tokens[0]:
            return []
        k = min(k, len(self.documents))
        found, scores = self.index.retrieve(tokens, k=k, show_progress=False)
        return [self.documents[int(i)] for i, s in zip(found[0], scores[0], strict=True) if s > 0]


def load_corpus(settings: ToolSettings) -> Corpus:
    """The corpus the settings name, read and indexed once per process (shared by every
    environment instance) and again only when the file changes."""
    path = Path(settings.corpus)
    if not path.is_file():
        raise DataError(
            f"{settings.corpus}: corpus file not found; set `corpus` in the recipe to a .jsonl, "
            ".csv or .parquet file of documents"
        )
    stat = path.stat()
    columns = tuple(getattr(settings, name) for name in COLUMN_FIELDS)
    return _load(str(path.resolve()), settings.corpus, stat.st_mtime_ns, stat.st_size, columns)


@lru_cache(maxsize=8)
def _load(path: str, shown: str, mtime_ns: int, size: int, columns: tuple[str, ...]) -> Corpus:
    from ..rows import load_rows, where

    rows = load_rows(path)
    for field, column in zip(COLUMN_FIELDS, columns, strict=True):
        if column not in rows.column_names:
            raise DataError(
                f"{shown}: no column '{column}' (columns: {', '.join(rows.column_names)}); set "
                f"`{field}` in the recipe to the column that holds it"
            )
    documents, seen = [], set()
    for index, row in enumerate(rows):
        values = []
        for field, column in zip(COLUMN_FIELDS, columns, strict=True):
            value = row[column]
            if value is None or not str(value).strip():
                raise DataError(
                    f"{where(shown, index)}: column '{column}' ({field}) is empty; every "
                    "document needs an id, a title and a text"
                )
            values.append(str(value).strip())
        if values[0] in seen:
            raise DataError(f"{where(shown, index)}: duplicate document id '{values[0]}'")
        seen.add(values[0])
        documents.append(Document(*values))
    return Corpus(documents)


class LookupEnvironment(Environment):
    """A local knowledge base the model searches and reads (`settings.corpus`)."""

    def __init__(self, settings: ToolSettings):
        super().__init__(settings)
        self.corpus = load_corpus(settings)
        self.opened: list[str] = []  # ids of the documents opened this episode

    def reset(self, **row) -> None:
        super().reset(**row)
        self.opened = []

    def search(self, query: str) -> str:
        """Search the knowledge base for documents about a topic.

        Open a hit by its id to read the whole document.

        Args:
            query: A few keywords, e.g. "Narrows Bridge opened".

        Returns:
            The best matching documents, one per line as "[id] title: start of the text".
        """
        with self._counting():
            query = str(query).strip()
            if not query:
                raise ToolError("empty query: pass a few keywords")
            hits = self.corpus.search(query, self.settings.search_results)
            if not hits:
                found = f"no documents match {quoted(query)}; try other keywords"
                return clip(found, self.settings.tool_output_chars)
            lines = [
                f"[{doc.id}] {doc.title}: "
                + textwrap.shorten(doc.text, SNIPPET_CHARS, placeholder=" ...")
                for doc in hits
            ]
            return clip("\n".join(lines), self.settings.tool_output_chars)

    def open(self, doc_id: str) -> str:
        """Read one document of the knowledge base.

        Args:
            doc_id: The id of a document, as shown in brackets by search.

        Returns:
            The document's title and text.
        """
        with self._counting():
            key = str(doc_id).strip().strip("[]").strip()
            document = self.corpus.by_id.get(key)
            if document is None:
                raise ToolError(f"no document {quoted(key)}; use an id from search")
            self.opened.append(key)
            return clip(f"{document.title}\n{document.text}", self.settings.tool_output_chars)
