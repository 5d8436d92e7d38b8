"""Studies: experiments run on the dev data that informed a design's choices. They are
not part of the library (nothing in ``memstrata`` imports them); each says how to run it,
from the repository's root, and its figures are in the design's docs."""
