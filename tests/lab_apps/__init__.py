"""The apps the hop lab (tests/hop_lab.py) runs behind real servers and proxies."""
