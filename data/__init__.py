"""Sample data shipped inside the package (installed as `judged.data`): the seed fixture (`seed/`) and the TREC DL
2020 passage sample (`trec-dl-2020-sample/`) that `judged demo` evaluates. Files only; their sources are in
data/README.md."""
