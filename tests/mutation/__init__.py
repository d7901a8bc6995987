"""Mutation harness: a catalogue of named mutants per module and a runner that checks the tests kill them.

``python -m tests.mutation [--module M] [--quick] [--json FILE] [--list]``; see ``docs/testing.md``.
"""
