"""The kit a paper imports: `base` (Paper, Table, Figure and the other declarations of a
plugin), `published` (the papers' published numbers, read from xlt/papers/<slug>/published/)
and `datasize` (the data-size tables every paper can declare). It imports no paper and not the
registry (xlt.papers): a plugin imports the kit, the registry imports the plugins."""
