"""Synthetic medical dictations with three structural label chains.

The generator first draws an abstract report (sections, subsections, enumerations,
sentences) for a "speaker" with individual habits, then renders it either as the
formatted report a typist would produce (``style="cor"``) or as the raw output of a
speech recognizer (``style="rcg"``).  Content decisions use one random stream and
rendering noise another, so the two styles drawn with the same ``random_state`` are
parallel corpora: the same reports, once formatted and once as recognized speech
(like C_COR and C_RCG in the thesis).
"""
import random
import re

import numpy as np
from sklearn.utils import check_random_state

from skfcrf import _dictation_vocab as V
from skfcrf.structure._spoken import spoken_words

__all__ = [
    "generate_dictations",
    "DICTATION_CHAINS",
    "SENTENCE_LABELS",
    "SUBSECTION_LABELS",
    "SECTION_LABELS",
    "DICTATION_LABELS",
    "SECTION_TYPES",
    "SUBSECTION_TYPES",
    "SECTION_HEADINGS",
    "SUBSECTION_HEADINGS",
    "DICTATED_PUNCTUATION",
]

# --------------------------------------------------------------------------------------
# public label inventories
# --------------------------------------------------------------------------------------

#: Names of the three label chains, finest first.
DICTATION_CHAINS = ("sentence", "subsection", "section")

#: Chain 0 labels (thesis table 6.3).  ``Enummarker`` has no Begin variant: a marker is
#: a segment of its own (one token in ``cor``; in ``rcg`` every token of a spoken marker
#: such as "number two" is labelled ``Enummarker``).
SENTENCE_LABELS = (
    "BeginHeading", "Heading", "BeginSubheading", "Subheading",
    "BeginSentence", "Sentence", "Enummarker",
)

SECTION_TYPES = V.SECTION_TYPES
SUBSECTION_TYPES = ("None", "Paragraph", "Enumelement") + V.SUBSECTION_TYPES


def _pairs(types):
    out = []
    for t in types:
        out.extend(("Begin" + t, t))
    return tuple(out)


#: Chain 1 labels: ``BeginNone``/``None`` (the level-1 segment holding a heading),
#: paragraphs, enumeration elements and typed subsections.
SUBSECTION_LABELS = _pairs(SUBSECTION_TYPES)
#: Chain 2 labels: one Begin/continuation pair per section type.
SECTION_LABELS = _pairs(SECTION_TYPES)
#: Label inventories of the three chains, finest first.
DICTATION_LABELS = (SENTENCE_LABELS, SUBSECTION_LABELS, SECTION_LABELS)
#: Heading variants per section type (first = canonical).
SECTION_HEADINGS = V.SECTION_HEADINGS
#: Subheading variants per subsection type (first = canonical).
SUBSECTION_HEADINGS = V.SUBSECTION_HEADINGS
#: Dictated punctuation words of ``rcg`` and the mark they stand for.
DICTATED_PUNCTUATION = {
    ("period",): ".", ("full", "stop"): ".", ("comma",): ",", ("colon",): ":",
    ("semicolon",): ";",
}

# interned label strings (shared objects keep the arrays small and building fast)
_B = {t: "Begin" + t for t in SUBSECTION_TYPES + SECTION_TYPES}
_BH, _H, _BSH, _SH, _BS, _S, _EM = SENTENCE_LABELS

# --------------------------------------------------------------------------------------
# template compilation
# --------------------------------------------------------------------------------------

_SLOT_RE = re.compile(r"\{(\w+)\}")


def _compile(text):
    """Template string -> tuple of items: str token, ('slot', name) or ('fmt', text)."""
    items = []
    for tok in text.split():
        m = _SLOT_RE.fullmatch(tok)
        if m:
            items.append(("slot", m.group(1)))
        elif "{" in tok:
            items.append(("fmt", tok))
        else:
            items.append(tok)
    return tuple(items)


_FILLERS = {k: [_compile(s) for s in v] for k, v in V.FILLERS.items()}
_SECTION_T = {k: [_compile(s) for s in v] for k, v in V.SECTION_TEMPLATES.items()}
_SUB_T = {k: [_compile(s) for s in v] for k, v in V.SUBSECTION_TEMPLATES.items()}
_GENERIC_T = [_compile(s) for s in V.GENERIC_SENTENCES]
_HPI_INTRO = _SECTION_T["HistoryOfPresentIllness"][:2]  # the narrative's opening sentences
_SECTION_T["HistoryOfPresentIllness"] = _SECTION_T["HistoryOfPresentIllness"][2:]



def _dec(lo, hi, r):
    return "%.1f" % (lo + (hi - lo) * r.random())


_NUMERIC = {
    "n": lambda r: str(r.randint(2, 9)),
    "s": lambda r: str(r.randint(3, 5)),
    "g": lambda r: str(r.randint(1, 4)),
    "d": lambda r: r.choice(("5", "10", "20", "25", "40", "50", "81", "100", "250", "500", "1000")),
    "age": lambda r: str(r.randint(19, 94)),
    "year": lambda r: str(r.randint(1975, 2007)),
    "date": lambda r: f"{r.randint(1, 12):02d}/{r.randint(1, 28):02d}/{r.randint(2005, 2008)}",
    "bp": lambda r: f"{r.randint(95, 185)}/{r.randint(55, 105)}",
    "hr": lambda r: str(r.randint(52, 125)),
    "rr": lambda r: str(r.randint(12, 26)),
    "temp": lambda r: _dec(96.8, 102.4, r),
    "o2": lambda r: str(r.randint(86, 100)),
    "wt": lambda r: str(r.randint(105, 290)),
    "ef": lambda r: str(r.randrange(20, 70, 5)),
    "na": lambda r: str(r.randint(126, 147)),
    "k": lambda r: _dec(2.9, 5.9, r),
    "cl": lambda r: str(r.randint(94, 111)),
    "hco3": lambda r: str(r.randint(18, 32)),
    "bun": lambda r: str(r.randint(6, 60)),
    "cr": lambda r: _dec(0.6, 3.5, r),
    "glu": lambda r: str(r.randint(68, 320)),
    "wbc": lambda r: _dec(3.0, 19.0, r),
    "hgb": lambda r: _dec(7.5, 16.5, r),
    "hct": lambda r: str(r.randint(24, 48)),
    "plt": lambda r: str(r.randint(60, 450)),
    "inr": lambda r: _dec(0.9, 3.5, r),
    "trop": lambda r: "%.2f" % (r.random() * 2),
    "a1c": lambda r: _dec(5.2, 11.5, r),
    "tsh": lambda r: _dec(0.3, 9.0, r),
}


def _expand(items, rng, ctx, out):
    """Append the tokens of a compiled template to ``out``."""
    for it in items:
        if it.__class__ is str:
            out.append(it)
        elif it[0] == "slot":
            name = it[1]
            if name in ctx:
                out.extend(ctx[name])
            elif name in _NUMERIC:
                out.append(_NUMERIC[name](rng))
            else:
                _expand(rng.choice(_FILLERS[name]), rng, ctx, out)
        else:  # slot(s) embedded in a token, e.g. "{age}-year-old"
            out.append(_SLOT_RE.sub(
                lambda m: ctx[m.group(1)][0] if m.group(1) in ctx else _NUMERIC[m.group(1)](rng),
                it[1]))
    return out


# --------------------------------------------------------------------------------------
# speakers and abstract reports
# --------------------------------------------------------------------------------------

_N_SPEAKERS = 24

# (section type, base inclusion probability); history block order varies per speaker
_OPENING = (("ChiefComplaints", 0.65), ("ReasonForEncounter", 0.45))
_HISTORY = (("PastHistory", 0.9), ("PastSurgicalHistory", 0.7), ("Medication", 0.85),
            ("Allergies", 0.85), ("Habits", 0.75), ("FamilyHistory", 0.55))
_LATE = (("DiagnosticStudies", 0.6), ("Findings", 0.1), ("Procedures", 0.08), ("Course", 0.15))
_CLOSING = (("FollowUp", 0.3), ("AdvanceDirectives", 0.06), ("Practitioner", 0.15))

# (min, max) sentences per paragraph block for narrative sections
_SIZES = {
    "ChiefComplaints": (1, 1), "ReasonForEncounter": (1, 2), "HistoryOfPresentIllness": (3, 7),
    "PastHistory": (1, 3), "PastSurgicalHistory": (1, 2), "FamilyHistory": (1, 2),
    "Habits": (1, 3), "Medication": (1, 3), "Allergies": (1, 1), "ReviewOfSystems": (1, 3),
    "PhysicalExamination": (1, 2), "Neurologic": (2, 4), "DiagnosticStudies": (1, 4),
    "Findings": (1, 3), "Procedures": (1, 2), "Course": (2, 5), "Diagnosis": (1, 2),
    "Plan": (1, 4), "DiagnosisAndPlan": (2, 4), "FollowUp": (1, 1), "AdvanceDirectives": (1, 1),
    "Practitioner": (1, 1),
}
# probability that a section is dictated as an enumeration (per-speaker jitter applied)
_ENUM_P = {"Diagnosis": 0.7, "DiagnosisAndPlan": 0.6, "Medication": 0.5, "PastHistory": 0.3,
           "Plan": 0.3, "PastSurgicalHistory": 0.2}
_PE_P = {"General": 0.95, "VitalSigns": 0.95, "HEENT": 0.8, "Head": 0.08, "Eyes": 0.15,
         "Ears": 0.05, "NoseAndSinuses": 0.05, "MouthAndThroat": 0.08, "Neck": 0.8,
         "LymphNodes": 0.12, "ThoraxAndLungs": 0.9, "Breasts": 0.05, "Cardiovascular": 0.9,
         "Abdomen": 0.85, "Genitourinary": 0.2, "AnoRectal": 0.1, "Back": 0.12,
         "Musculoskeletal": 0.25, "Extremities": 0.85, "Skin": 0.3, "Neurologic": 0.8,
         "Psychiatric": 0.12}
_ROS_P = {"General": 0.8, "Eyes": 0.3, "Ears": 0.15, "Respiratory": 0.8, "Cardiac": 0.8,
          "Gastrointestinal": 0.75, "Genitourinary": 0.6, "Musculoskeletal": 0.5, "Skin": 0.35,
          "Neurologic": 0.6, "Psychiatric": 0.35, "Endocrine": 0.3, "Hematologic": 0.25}


# sections whose content speakers mix (vocabulary overlap, as in the thesis's confusions)
_RELATED = {
    "ChiefComplaints": ("ReasonForEncounter", "Diagnosis"),
    "ReasonForEncounter": ("ChiefComplaints", "HistoryOfPresentIllness"),
    "HistoryOfPresentIllness": ("ReasonForEncounter", "PastHistory", "Medication", "Course",
                                "ReviewOfSystems", "Habits"),
    "PastHistory": ("PastSurgicalHistory", "Diagnosis", "HistoryOfPresentIllness"),
    "PastSurgicalHistory": ("PastHistory", "Procedures"),
    "FamilyHistory": ("Habits", "PastHistory"),
    "Habits": ("FamilyHistory",),
    "Medication": ("Plan", "Allergies"),
    "ReviewOfSystems": ("HistoryOfPresentIllness",),
    "Neurologic": ("PhysicalExamination",),
    "DiagnosticStudies": ("Findings", "Course"),
    "Findings": ("DiagnosticStudies",),
    "Procedures": ("Course", "PastSurgicalHistory"),
    "Course": ("HistoryOfPresentIllness", "Plan", "DiagnosticStudies"),
    "Diagnosis": ("DiagnosisAndPlan", "PastHistory", "Plan"),
    "Plan": ("DiagnosisAndPlan", "FollowUp", "Diagnosis", "Medication"),
    "DiagnosisAndPlan": ("Diagnosis", "Plan"),
    "FollowUp": ("Plan",),
}

_GROW = frozenset(("HistoryOfPresentIllness", "Course", "Plan", "DiagnosticStudies", "Habits",
                   "PastHistory"))


def _jitter(rng, p, spread=0.25):
    return min(1.0, max(0.0, p + rng.uniform(-spread, spread)))


class _Speaker:
    """Per-speaker habits (content and recognizer-level)."""

    def __init__(self, rng):
        j = _jitter
        self.opening = [(t, j(rng, p)) for t, p in _OPENING]
        hist = list(_HISTORY)
        for _ in range(rng.randint(0, 3)):  # a few adjacent swaps of the history block
            i = rng.randrange(len(hist) - 1)
            hist[i], hist[i + 1] = hist[i + 1], hist[i]
        self.history = [(t, j(rng, p)) for t, p in hist]
        self.p_ros = j(rng, 0.6, 0.35)
        self.ros_subsections = rng.random() < 0.6
        self.neuro_section = rng.random() < 0.25
        self.late = [(t, j(rng, p, 0.1)) for t, p in _LATE]
        self.studies_first = rng.random() < 0.5  # diagnostic studies before the examination
        self.combined_dp = rng.random() < 0.3
        self.plan_first = rng.random() < 0.1
        self.closing = [(t, j(rng, p, 0.15)) for t, p in _CLOSING]
        self.enum_p = {t: j(rng, p, 0.3) for t, p in _ENUM_P.items()}
        self.pe_p = {t: j(rng, p, 0.1) for t, p in _PE_P.items()}
        self.ros_p = {t: j(rng, p, 0.15) for t, p in _ROS_P.items()}
        self.heading = {t: rng.randrange(len(v)) for t, v in V.SECTION_HEADINGS.items()}
        self.subheading = {t: rng.randrange(len(v)) for t, v in V.SUBSECTION_HEADINGS.items()}
        self.verbosity = rng.uniform(0.7, 1.4)
        self.borrow = rng.uniform(0.05, 0.4)  # how loosely the speaker keeps sections apart
        # recognizer-level habits
        self.p_heading = rng.uniform(0.15, 0.95)
        self.p_heading_colon = rng.uniform(0.0, 0.5)
        self.p_subheading = rng.uniform(0.3, 0.95)
        self.p_period = rng.uniform(0.05, 0.95)
        self.p_comma = self.p_period * rng.uniform(0.0, 0.7)
        self.period_word = rng.choice(V.PERIOD_WORDS)
        self.p_newpar = rng.uniform(0.0, 0.7)
        self.newpar_word = rng.choice(V.NEW_PARAGRAPH)
        w = [rng.random() for _ in range(4)]  # "number k" | "k" | "next number" | none
        s = sum(w)
        self.marker_w = [x / s for x in w]
        self.p_hes = rng.uniform(0.0, 0.25)  # per sentence
        self.p_rep = rng.uniform(0.0, 0.08)
        self.p_meta = rng.uniform(0.0, 0.04)
        self.p_end = rng.uniform(0.2, 0.9)
        self.p_subst = rng.uniform(0.03, 0.15)  # per confusable token
        self.p_date_meta = rng.uniform(0.0, 0.6)


def _context(rng):
    male = rng.random() < 0.5
    if male:
        ctx = {"he": ["he"], "his": ["his"], "him": ["him"],
               "man": [rng.choice(("gentleman", "man", "male"))], "Title": ["Mr."]}
    else:
        ctx = {"he": ["she"], "his": ["her"], "him": ["her"],
               "man": [rng.choice(("lady", "woman", "female"))], "Title": ["Mrs."]}
    ctx["race"] = rng.choice((["Caucasian"], ["African", "American"], ["Hispanic"], ["Asian"]))
    ctx["age"] = [str(rng.randint(19, 94))]
    return ctx


def _sentence(rng, templates, ctx, used=None):
    tpl = rng.choice(templates)
    if used is not None:
        for _ in range(3):  # avoid repeating a template within one section
            if id(tpl) not in used:
                break
            tpl = rng.choice(templates)
        used.add(id(tpl))
    toks = _expand(tpl, rng, ctx, [])
    toks.append(".")
    return toks


def _templates(rng, sp, stype):
    """A section's own templates, or (at the speaker's rate) those of a related section."""
    rel = _RELATED.get(stype)
    if rel and rng.random() < sp.borrow:
        return _SECTION_T[rng.choice(rel)]
    return _SECTION_T[stype]


def _paragraph(rng, sp, stype, ctx, lo, hi, verbosity, used):
    n = max(lo, min(int(round(rng.randint(lo, hi) * verbosity)), hi + 2))
    sents = []
    for _ in range(n):
        if lo > 1 and rng.random() < 0.08:
            sents.append(_sentence(rng, _GENERIC_T, ctx, used))
        else:
            sents.append(_sentence(rng, _templates(rng, sp, stype), ctx, used))
    return sents


def _section(rng, sp, stype, ctx):
    """Abstract section: (stype, heading tokens, [block]); block = [btype, subheading, sents]."""
    variants = V.SECTION_HEADINGS[stype]
    heading = variants[sp.heading[stype] if rng.random() < 0.8 else rng.randrange(len(variants))]
    heading = heading.split()
    blocks = []
    used = set()
    lo, hi = _SIZES[stype]
    if stype in ("PhysicalExamination", "ReviewOfSystems") or (
        stype == "Neurologic" and rng.random() < 0.7
    ):
        if stype == "PhysicalExamination":
            probs = sp.pe_p
            if sp.neuro_section:
                probs = dict(probs, Neurologic=0.0)
        elif stype == "ReviewOfSystems":
            probs = sp.ros_p if sp.ros_subsections else None
        else:
            probs = {t: 0.75 for t in V.NEURO_SUBSECTIONS}
        if probs is not None:
            for sub, p in probs.items():
                if rng.random() < p:
                    svars = V.SUBSECTION_HEADINGS[sub]
                    sh = svars[sp.subheading[sub] if rng.random() < 0.85 else rng.randrange(len(svars))]
                    n = 1 if rng.random() < 0.6 else 2
                    sents = [_sentence(rng, _SUB_T[sub], ctx, used) for _ in range(n)]
                    blocks.append(["Sub", sub, sh.split(), sents])
        if not blocks or (stype == "ReviewOfSystems" and rng.random() < 0.3):
            blocks.append(["Par", "Paragraph", None, _paragraph(rng, sp, stype, ctx, 1, 2, 1.0, used)])
        return [stype, heading, blocks]
    if stype in sp.enum_p and rng.random() < sp.enum_p[stype]:
        n_items = rng.randint(2, 5)
        for _ in range(n_items):
            sents = [_sentence(rng, _templates(rng, sp, stype), ctx, used)]
            if stype in ("Diagnosis", "DiagnosisAndPlan", "Plan") and rng.random() < 0.35:
                other = _SECTION_T["Plan" if stype != "Plan" else "Diagnosis"]
                sents.append(_sentence(rng, other, ctx, used))
            blocks.append(["Enum", "Enumelement", None, sents])
        if rng.random() < 0.15:  # a closing paragraph after the list
            blocks.append(["Par", "Paragraph", None, _paragraph(rng, sp, stype, ctx, 1, 2, 1.0, used)])
        return [stype, heading, blocks]
    n_par = 1
    if stype in ("HistoryOfPresentIllness", "Course", "Plan", "DiagnosticStudies"):
        n_par = rng.choice((1, 1, 2, 2, 3)) if stype == "HistoryOfPresentIllness" else rng.choice((1, 1, 2))
    for _ in range(n_par):
        blocks.append(["Par", "Paragraph", None,
                       _paragraph(rng, sp, stype, ctx, lo, hi, sp.verbosity, used)])
    if stype == "HistoryOfPresentIllness":  # the narrative opens with the introduction
        blocks[0][3][0] = _sentence(rng, _HPI_INTRO, ctx)
    return [stype, heading, blocks]


def _section_order(rng, sp):
    order = []
    for t, p in sp.opening:
        if rng.random() < p:
            order.append(t)
    order.append("HistoryOfPresentIllness")
    for t, p in sp.history:
        if rng.random() < p:
            order.append(t)
    if rng.random() < sp.p_ros:
        order.append("ReviewOfSystems")
    late = [t for t, p in sp.late if rng.random() < p]
    exam = []
    if rng.random() < 0.95:
        exam.append("PhysicalExamination")
        if sp.neuro_section:
            exam.append("Neurologic")
    order.extend(late + exam if sp.studies_first else exam + late)
    if sp.combined_dp:
        order.append("DiagnosisAndPlan")
    else:
        dp = ["Diagnosis", "Plan"]
        if sp.plan_first:
            dp.reverse()
        order.extend(dp)
    for t, p in sp.closing:
        if rng.random() < p:
            order.append(t)
    return order


def _n_tokens(report):
    n = 0
    for _, heading, blocks in report:
        n += len(heading)
        for b in blocks:
            if b[2] is not None:
                n += len(b[2]) + 1
            if b[0] == "Enum":
                n += 1
            for s in b[3]:
                n += len(s)
    return n


def _make_report(rng, sp):
    ctx = _context(rng)
    report = [_section(rng, sp, t, ctx) for t in _section_order(rng, sp)]
    target = rng.randint(490, 770)
    n = _n_tokens(report)
    grow = [sec for sec in report if sec[0] in _GROW]
    grow.extend(sec for sec in report if sec[0] == "HistoryOfPresentIllness")  # double weight
    used = set()
    while n < target:  # grow narrative sections
        sec = rng.choice(grow)
        last = sec[2][-1]
        if last[0] != "Par" or len(last[3]) >= 8:
            last = ["Par", "Paragraph", None, []]
            sec[2].append(last)
        s = _sentence(rng, _templates(rng, sp, sec[0]), ctx, used)
        last[3].append(s)
        n += len(s)
    limit = target + 30
    while n > limit:  # shrink the longest paragraph-like block
        best = None
        for sec in report:
            for b in sec[2]:
                if len(b[3]) > 1 and (best is None or len(b[3]) > len(best[3])):
                    best = b
        if best is None:
            break
        n -= len(best[3].pop())
    return report


# --------------------------------------------------------------------------------------
# rendering
# --------------------------------------------------------------------------------------

def _cap(tok):
    return tok[:1].upper() + tok[1:]


def _render_cor(report):
    toks, c0, c1, c2 = [], [], [], []
    for stype, heading, blocks in report:
        bs = _B[stype]
        n = len(heading)
        toks.extend(heading)
        c0.append(_BH)
        c0.extend([_H] * (n - 1))
        c1.append("BeginNone")
        c1.extend(["None"] * (n - 1))
        c2.append(bs)
        c2.extend([stype] * (n - 1))
        k = 0
        for kind, btype, sub, sents in blocks:
            start = len(toks)
            if sub is not None:
                toks.extend(sub)
                toks.append(":")
                c0.append(_BSH)
                c0.extend([_SH] * len(sub))
            if kind == "Enum":
                k += 1
                toks.append(f"{k}.")
                c0.append(_EM)
            else:
                k = 0
            for s in sents:
                toks.append(_cap(s[0]))
                toks.extend(s[1:])
                c0.append(_BS)
                c0.extend([_S] * (len(s) - 1))
            m = len(toks) - start
            c1.append(_B[btype])
            c1.extend([btype] * (m - 1))
            c2.extend([stype] * m)
    return toks, (c0, c1, c2)


_DATE_RE = re.compile(r"(\d\d)/(\d\d)/(\d{4})")


_PUNCT = frozenset((".", ",", ":", ";"))
_CONFUSABLE = V.SUBSTITUTIONS
_FILLER_WORDS = ("right", "left", "mild", "the", "no", "with", "pain", "blood", "normal")


def _speak_sentence(sent, sp, rng):
    """Recognizer tokens of one sentence (the first token starts the sentence)."""
    out = []
    last = len(sent) - 1
    for i, tok in enumerate(sent):
        if tok in _PUNCT:
            if i == last:
                continue
            if rng.random() < sp.p_comma:
                out.extend(V.PUNCT_WORDS[tok])
            continue
        if "/" in tok and _DATE_RE.fullmatch(tok) and rng.random() < sp.p_date_meta:
            out.extend(rng.choice(V.META_DATE))
            continue
        for w in spoken_words(tok):
            sub = _CONFUSABLE.get(w)
            if sub is not None and rng.random() < sp.p_subst:
                out.extend(sub)
            else:
                out.append(w)
    if not out:
        out.append("uh")
    if len(out) > 2:
        r = rng.random()
        if r < sp.p_hes:
            out.insert(rng.randrange(1, len(out)), rng.choice(V.HESITATIONS))
        if rng.random() < sp.p_rep:  # repetition of one or two words
            i = rng.randrange(0, len(out) - 1)
            k = 1 if rng.random() < 0.7 else 2
            out[i + k:i + k] = out[i:i + k]
        if rng.random() < sp.p_meta:  # a false start retracted by an instruction
            i = rng.randrange(1, len(out))
            out[i:i] = [rng.choice(_FILLER_WORDS)] + list(rng.choice(V.META_MID))
    if sent[last] in _PUNCT and rng.random() < sp.p_period:
        out.extend(sp.period_word)
    return out


def _render_rcg(report, sp, rng):
    toks, c0, c1, c2 = [], [], [], []
    nsec = len(report)
    for si, (stype, heading, blocks) in enumerate(report):
        bs = _B[stype]
        sec_start = len(toks)
        if rng.random() < sp.p_heading:
            words = [w for t in heading for w in spoken_words(t)]
            if len(words) > 1 and rng.random() < 0.15:
                words = words[1:]
            if rng.random() < sp.p_heading_colon:
                words.append("colon")
            n = len(words)
            toks.extend(words)
            c0.append(_BH)
            c0.extend([_H] * (n - 1))
            c1.append("BeginNone")
            c1.extend(["None"] * (n - 1))
        k = 0
        nb = len(blocks)
        for bi, (kind, btype, sub, sents) in enumerate(blocks):
            start = len(toks)
            if sub is not None and rng.random() < sp.p_subheading:
                words = [w for t in sub for w in spoken_words(t)]
                if rng.random() < sp.p_heading_colon:
                    words.append("colon")
                toks.extend(words)
                c0.append(_BSH)
                c0.extend([_SH] * (len(words) - 1))
            if kind == "Enum":
                k += 1
                r = rng.random()
                w = sp.marker_w
                if r < w[0]:
                    mk = ("number", V.ENUM_SPOKEN_NUMBERS[min(k, 9) - 1])
                elif r < w[0] + w[1]:
                    mk = (V.ENUM_SPOKEN_NUMBERS[min(k, 9) - 1],)
                elif r < w[0] + w[1] + w[2]:
                    mk = ("next", "number") if k > 1 else ("number", "one")
                else:
                    mk = ()
                toks.extend(mk)
                c0.extend([_EM] * len(mk))
            else:
                k = 0
            for j, s in enumerate(sents):
                words = _speak_sentence(s, sp, rng)
                if j == len(sents) - 1:
                    if bi < nb - 1 or si < nsec - 1:
                        if kind == "Par" and rng.random() < sp.p_newpar:
                            words.extend(sp.newpar_word)
                    elif rng.random() < sp.p_end:
                        words.extend(rng.choice(V.META_END))
                toks.extend(words)
                c0.append(_BS)
                c0.extend([_S] * (len(words) - 1))
            m = len(toks) - start
            c1.append(_B[btype])
            c1.extend([btype] * (m - 1))
        m = len(toks) - sec_start
        c2.append(bs)
        c2.extend([stype] * (m - 1))
    return toks, (c0, c1, c2)


def _labels_array(chains):
    arr = np.empty((len(chains[0]), len(chains)), dtype=object)
    for c, col in enumerate(chains):
        arr[:, c] = col
    return arr


def generate_dictations(n_reports, style, random_state):
    """The reports of :func:`~skfcrf.datasets.make_dictations` without recognition noise
    control (``word_error_rate=None``); arguments validated."""
    if isinstance(n_reports, bool) or not isinstance(n_reports, (int, np.integer)) or n_reports < 0:
        raise ValueError(f"n_reports must be a non-negative integer, got {n_reports!r}")
    if style not in ("rcg", "cor"):
        raise ValueError(f"style must be 'rcg' or 'cor', got {style!r}")
    rs = check_random_state(random_state)
    seed = int(rs.randint(0, 2**31 - 1))
    content = random.Random(seed)
    noise = random.Random(seed * 2 + 1)
    speakers = [_Speaker(content) for _ in range(_N_SPEAKERS)]
    X, y = [], []
    for _ in range(int(n_reports)):
        sp = speakers[content.randrange(_N_SPEAKERS)]
        report = _make_report(content, sp)
        if style == "cor":
            toks, chains = _render_cor(report)
        else:
            toks, chains = _render_rcg(report, sp, noise)
        X.append(toks)
        y.append(_labels_array(chains))
    return X, y
