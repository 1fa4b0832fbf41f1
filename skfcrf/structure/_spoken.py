"""How a written token is said: the words a speaker dictates for it.

One function, :func:`spoken_words`, shared by the recognizer renderings of the
dictation generator (``make_dictations(style="rcg")``), the noise model
(:func:`skfcrf.datasets.dictate_report`) and the transcript aligner
(:func:`skfcrf.structure.align_transcript`, which compares report and transcript
words in this spoken form).

* titles and symbols: ``Mr.`` -> ``mister``, ``Dr.`` -> ``doctor``, ``%`` -> ``percent``,
  ``&`` -> ``and``, ``+`` -> ``plus``;
* dates ``mm/dd/yyyy`` (month 1-12) -> ``("march", "7", "2006")``;
* decimals and ratios: ``3.5`` -> ``3 point 5``, ``120/80`` -> ``120 over 80``;
* otherwise lowercase pieces split at every character that is not a letter or digit
  (``67-year-old`` -> ``67 year old``, ``b.i.d.`` -> ``b i d``); apostrophes vanish
  (``Crohn's`` -> ``crohns``); letters of any script are kept.
"""
import re

__all__ = ["spoken_words"]

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
          "september", "october", "november", "december")
_SAID = {"mr.": ("mister",), "mrs.": ("missus",), "ms.": ("miss",), "dr.": ("doctor",),
         "&": ("and",), "+": ("plus",), "%": ("percent",)}
DATE = re.compile(r"(\d{1,2})/(\d{1,2})/(\d{2,4})")
_NONWORD = re.compile(r"[\W_]+")
_CACHE = {}
_CACHE_LIMIT = 1_000_000


def spoken_words(token):
    """The lowercase words a speaker says for a written token (a tuple, maybe empty).

    Examples
    --------
    >>> spoken_words("67-year-old"), spoken_words("Dr."), spoken_words("03/07/2006")
    (('67', 'year', 'old'), ('doctor',), ('march', '7', '2006'))
    >>> spoken_words("98.6%"), spoken_words("120/80"), spoken_words(".")
    (('98', 'point', '6', 'percent'), ('120', 'over', '80'), ())
    """
    out = _CACHE.get(token)
    if out is not None:
        return out
    low = token.lower()
    out = _SAID.get(low)
    if out is None:
        m = DATE.fullmatch(low)
        if m and 1 <= int(m.group(1)) <= 12:
            out = (MONTHS[int(m.group(1)) - 1], str(int(m.group(2))), m.group(3))
        else:
            s = re.sub(r"(\d)\.(\d)", r"\1 point \2", low)
            s = re.sub(r"(\d)/(\d)", r"\1 over \2", s)
            s = s.replace("%", " percent ").replace("+", " plus ").replace("&", " and ").replace("'", "")
            out = tuple(p for p in _NONWORD.split(s) if p)
    if len(_CACHE) > _CACHE_LIMIT:
        _CACHE.clear()
    _CACHE[token] = out
    return out
