"""Memory: finding things in the store again, by words and by meaning.

- search: `retrieval` (recall's candidates and answers), `ranking` (fusing BM25, vectors, recency and paths),
  `chunking` (episode text into vector-sized chunks), `privacy` (what never reaches an index);
- the answer: `line_choice` (which lines of a hit answer, of its text and its raw output) and `hits` (recall's
  compact hits within a budget);
- the vector index: `vector_index` (one Chroma collection per store), `chroma_rest` (Chroma's REST API over
  plain HTTP, without the chromadb client) on `chroma_http` (one request, with its token, over TCP or a unix
  socket), `chroma_server` (the shared local server this package starts and stops), `chroma_serve` (that server:
  Chroma's engine behind a token, owner-only), `embedding` (the bundled MiniLM model), `chroma_embedding` (it as
  an embedding function, for a chromadb client of the same collections), `forgetting` (`codeoid forget` reaching
  Chroma), and `indexer`, the long-lived loop that embeds new episodes;
- the workspace index: `workspace_index` (the compact text a window starts with), `topics` (its clusters) and
  `index_builder`, the loop that keeps it built.

Heavy libraries (onnxruntime, numpy) load only inside the functions that need them, in long-lived
processes. This package reads the store and never imports `codeoid.capture`, `codeoid.setup`, `codeoid.rotation`,
`codeoid.fork`, the CLI or an entry point.
"""
