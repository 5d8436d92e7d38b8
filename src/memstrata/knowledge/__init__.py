"""What memory knows to be true now: statements read from turns, which of them later
statements replaced, and what a question asks of time.

One place, below the engine and the designs, that both read:

* :mod:`.asking`: whether a question asks about now, about the past or about a change;
* :mod:`.statements`: (subject, slot, value) statements of a turn, read off its parse;
* :mod:`.slots`: which slots hold one value at a time, learned from a subject's
  statements, and the supersession of earlier statements by later ones;
* :mod:`.present`: the search order a question about now or about the past gets, from
  the hits' own turns and times.
"""
