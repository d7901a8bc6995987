"""POMDP files: Cassandra's ``.POMDP`` format (read, parse, write), APPL's POMDPX (read; flat write), and
alpha-vector policy files and policy graphs."""

from ._parser import POMDPFileWarning, parse_pomdp, read_pomdp, write_pomdp
from ._policy_io import AlphaPolicy, policy_graph, read_policy, write_policy, write_policy_graph
from ._pomdpx import read_pomdpx
from ._pomdpx_write import write_pomdpx

__all__ = ["POMDPFileWarning", "parse_pomdp", "read_pomdp", "write_pomdp", "read_pomdpx", "write_pomdpx",
           "AlphaPolicy", "read_policy", "write_policy", "policy_graph", "write_policy_graph"]
