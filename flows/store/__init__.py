"""The warehouse and everything that reads or writes files: input readers, streams, content hashes, the
warehouse's atomic writes and catalog, and read-only SQL over it.
"""
