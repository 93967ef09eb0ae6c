"""Word alignment of WikiMatrix bitext (the adjust paper's data, before the adjustment).

    bitext (.tsv.gz) --pool--> pool.tsv --backend--> forward / reverse (or symmetrised) links
        --intersect, 1-to-1--> links.pharaoh --sample (seeded)--> n<N>.seed<S>.jsonl

- `pool`: stream WikiMatrix, tokenise, drop long / identical pairs, keep the first `size`.
- `backends`: fast_align (binary on PATH), eflomal, systran-align (PyPI); one interface.
- `links`: intersection and the 1-to-1 filter (ours, whatever the backend).
- `stage`: run a backend on a pool and write the final links with their provenance.
- `sample`: seeded samples of aligned sentence pairs, each its own file.
- `aer`: precision, recall and alignment error rate against gold links (the tiny world).
- `l2`: L2 distances of aligned vs unrelated words (adjust's Figures 1-2).
- `targets`: the stage's paths and target lists (the workflow reads them).
"""
