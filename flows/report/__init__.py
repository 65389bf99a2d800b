"""What a person reads: the text, trec and JSON outputs of an evaluation, the comparison's outputs, the HTML
report, and the wording they share.
"""
