"""What a user message says about the agent's last turn, as named cues (stdlib only).

Each cue is a small regular expression over the message (or the agent's turn it answers);
the detector (:mod:`lore.extract.detect`) weighs them with a linear model. The cues are
written from how people push back on coding agents — rejecting ("no, …", "that's not
right"), naming the agent's mistake ("you didn't update …", "you hardcoded …"), undoing,
redirecting ("use X instead"), reminding of a rule, laying down a standing rule ("from now
on", "always", "never", "make a rule") — and from the shapes that look alike but are not
corrections: failure reports ("still blank"), declined offers (a bare "no" to "Would you
like me to …?"), task requests that say "instead", approvals that start with "actually".
"""

from __future__ import annotations

import math
import re
import zlib

# ---- the message --------------------------------------------------------------------
_N = r"(?:n'?t|\s+not)"  # "don't", "dont", "do not"
MESSAGE_CUES: dict[str, str] = {
    # Rejection at the start: "no, …", "nope …", "wrong", "stop"
    "opens_no": r"^\W*(?:no+|nope|nah)\b(?!\s+(?:problem|worries|rush|thanks|need\s+to\s+apolog))",
    "opens_wait": r"^\W*(?:wait|hold\s+on|hmm+|ugh+|hm+|oops|stop)\b",
    "opens_actually": r"^\W*(?:actually|on\s+second\s+thought)\b",
    "not_right": r"\b(?:(?:that|this|it|which)(?:'s|\s+is|\s+was)?\s*(?:not|n't|isn'?t|wasn'?t)\s+"
                 r"(?:right|correct|true|what\s+i|exactly|how|the\s+(?:right|correct))|"
                 r"not\s+what\s+i\s+(?:asked|wanted|meant|said)|\bwrong\b|incorrect|"
                 r"that'?s\s+not\s+it)",
    "you_did": r"\byou(?:'ve|\s+have|\s+just)?\s+(?:didn'?t|did\s+not|forgot|missed|broke|removed|"
               r"deleted|ignored|hard-?coded|overwrote|reverted|skipped|left\s+out|changed|"
               r"edited|used|added|introduced|misunderstood|should\s+have|shouldn'?t\s+have)\b",
    "you_are": r"\byou(?:'re|\s+are)\s+(?:editing|using|doing|modifying|changing|adding|ignoring|"
               r"still|not|again|missing|making|creating|writing|overcomplicating)\b",
    "why_did_you": r"\bwhy\s+(?:did|are|would|have)\s+you\b|\bwhy\s+(?:is|does)\s+(?:it|this|that)\s+now\b",
    "i_said": r"\b(?:i\s+(?:said|told\s+you|asked\s+(?:you\s+)?(?:for|to|not)|meant|only\s+wanted|"
              r"just\s+wanted|thought\s+we|already\s+(?:said|told))|as\s+i\s+said|like\s+i\s+said|"
              r"remind(?:ed)?\s+you|as\s+(?:is\s+)?(?:specified|stated|described)\s+(?:in|by)|"
              r"according\s+to)\b",
    "undo": r"\b(?:undo|revert|roll\s*back|put\s+(?:it|that|them)\s+back|go\s+back\s+to|"
            r"restore|back\s+out|get\s+rid\s+of\s+(?:that|this|those|these|what\s+you))\b",
    "instead": r"\binstead\b",
    "instead_of": r"\binstead\s+of\b",
    "use_instead": r"\b(?:use|using|go\s+with|switch\s+to)\s+.{1,40}?\binstead\b",
    "rather": r"\brather\s+than\b|\bbut\s+rather\b",
    "not_but": r"\bnot\s+.{1,50}?,?\s+(?:but|rather)\s+",
    "dont_do": rf"(?:^|[.,;:!?\n-]\s*|\b(?:and|but|so|please|just)\s+)(?:do{_N}|never|stop|quit|avoid)\s+"
               r"[a-z]",
    "dont_anywhere": rf"\b(?:do{_N}|never|stop\s+\w+ing|avoid)\b",
    "no_need": rf"\bno\s+need\b|\b(?:do{_N}|does{_N})\s+need\b|not\s+(?:necessary|needed)|"
               r"unnecessary|shouldn'?t|should\s+not|must\s+not|mustn'?t",
    "should_be": r"\b(?:should|must|needs?\s+to|has\s+to|have\s+to)\s+(?:be|go|use|live|stay|"
                 r"always|only|never)\b",
    "regression": r"\bregress|\bbroke\b|\bbroken\b|\bmessed\s+up|made\s+(?:it|the|things)\s+\w*\s*"
                  r"(?:worse|invisible|disappear|slower)|it\s+was\s+working|used\s+to\s+work|"
                  r"\bstill\s+(?:contains|has|uses|references|includes|shows\s+the)\b",
    "too_much": r"\btoo\s+(?:much|verbose|complex|complicated|long|many|big|small|large|wordy)\b|"
                r"\boverkill\b|over-?engineer|over-?complicat",
    "redo": r"\b(?:redo|re-do|be\s+redone|from\s+scratch|start\s+over|think\s+(?:more|harder)|"
            r"be\s+more\s+careful|more\s+carefully)\b",
    "handoff": r"\b(?:do\s+it\s+yourself|yourself|how\s+about\s+you|why\s+don'?t\s+you|"
               r"you\s+(?:do|open|run|check)\s+it)\b",
    "missed": r"\b(?:missed|forgot|left\s+out|didn'?t\s+(?:update|change|add|include|remove|fix|"
              r"apply|touch|follow|read))\b",
    "already_exists": r"\b(?:already\s+(?:exists?|have|has|are|is)|there\s+(?:are|is)\s+al?ready)\b",
    "names_tool": r"\b(?:use|using|switch\s+to|go\s+with|stick\s+(?:to|with))\s+(?!it\b|this\b|that\b|"
                  r"them\b|the\s+same\b|any\b|some\b|a\s+different\b)[`'\"@\w]",
    # Standing rules and preferences
    "always_never": r"\b(?:always|never)\b",
    "from_now_on": r"\b(?:from\s+now\s+on|going\s+forward|in\s+(?:the\s+)?future|next\s+time|"
                   r"every\s*time|each\s+time|whenever|by\s+default|as\s+a\s+(?:general\s+)?rule|"
                   r"from\s+here\s+on|in\s+general|at\s+all\s+times)\b",
    "make_rule": r"\b(?:(?:make|add|create|write|record|update|document|save)\s+(?:a|the|this|that|"
                 r"an?\s+\w+|this\s+as\s+an?)?\s*(?:\w+\s+)?(?:rule|preference|convention|guideline|"
                 r"memory|memories)|remember\s+(?:that|this|to)|update\s+(?:your\s+)?mem\w*|"
                 r"claude\.md|agents\.md|\.cursorrules|\.mdc\b|rules?\s+file)",
    "i_prefer": r"\bi(?:'d|\s+would)?\s+(?:prefer|rather|like\s+it\s+when|hate|love\s+it\s+when)\b|"
                r"\bi\s+(?:don'?t|do\s+not)\s+(?:like|want)\b|\bmy\s+preference\b|"
                r"\bi\s+want\s+(?:you\s+)?to\s+(?:always|never)\b",
    "must_caps": r"\b(?:MUST|NEVER|ALWAYS|DON'?T|DO\s+NOT)\b",
    "important": r"\b(?:it'?s|it\s+is)\s+(?:important|essential|crucial)\b|\bmake\s+sure\s+(?:to\s+)?"
                 r"(?:always|never)\b",
    "we_convention": r"\bwe\s+(?:always|never|don'?t\s+use|do\s+not\s+use|rely\s+on|prefer|"
                     r"only\s+use|use\s+\S+\s+(?:for|instead|not))\b|\bour\s+(?:convention|standard|style|rule)\b|"
                     r"\bthe\s+project\s+uses\b",
    # Shapes that are not corrections
    "failure_report": r"^\W*(?:(?:no|nope|hmm+|ok|okay|but|still|and)\W*)*(?:it\s+)?(?:still\s+)?"
                      r"(?:does\s*n'?t|does\s+not|isn'?t|is\s+not|not|doesnt|won'?t|can'?t)\s+"
                      r"(?:work|working|load|loading|show|showing|fix|start|starting|build|run)|"
                      r"\b(?:doesn'?t|does\s+not|didn'?t|did\s+not|isn'?t|won'?t|can'?t|still\s+not)\s+"
                      r"(?:work|load|show|display|appear|find|match|start|build|run|render|help)|"
                      r"\b(?:was|is|it'?s|still)\s+(?:blank|empty|broken|failing|the\s+same)\b|"
                      r"\bno\s+(?:improv\w*|change|difference|luck)\b|\bsame\s+(?:problem|error|"
                      r"issue|result)s?\b|\bstill\s+(?:get|getting|broken|blank|fail|failing|the\s+same|"
                      r"no|not|doesn'?t|isn'?t|empty|nothing|seeing)|\b(?:build|test|tests)\s+"
                      r"(?:fails?|failing|failed)\b|\bit'?s\s+(?:blank|empty)\b",
    "question_start": r"^\W*(?:how|what|where|when|which|who|is|are|can|could|would|do|does|did|"
                      r"should|will|have|has)\b",
    "question_end": r"\?\W*$",
    "approval": r"^\W*(?:yes|yeah|yep|yup|ok|okay|great|perfect|thanks|thank\s+you|good|nice|cool|"
                r"sweet|awesome|lgtm|looks\s+good|sounds\s+good|go\s+ahead|proceed|continue|"
                r"excellent|amazing|love\s+it|very\s+good|correct|exactly|right)\b",
    "request": r"^\W*(?:(?:can|could|would|will)\s+you|please|pls|let'?s|lets|i\s+(?:want|need|would\s+"
               r"like)|add|create|make|implement|build|write|fix|update|change|remove|put|move|run|"
               r"commit|push|check|show|give|generate|set\s+up|install|deploy|help|review|refactor)\b",
    "greeting": r"^\W*(?:hi|hello|hey|helo|yo)\b",
    "agrees": r"\b(?:you'?re\s+right|that'?s\s+(?:right|fine|correct|good)|looks\s+(?:good|right)|"
              r"sounds\s+good|makes\s+sense|convinced\s+me|good\s+idea|go\s+ahead|"
              r"^\W*actually\W+(?:yes|yeah|ok|okay|sure|perfect|great))\b",
    "apology": r"\b(?:sorry|my\s+bad|my\s+mistake)\b",
    "additive": r"\b(?:also|as\s+well|in\s+addition|additionally|another|new\s+feature|"
                r"and\s+then|next\s+step)\b",
    "continue": r"\b(?:continue|carry\s+on|keep\s+going|go\s+on|proceed)\b",
}

# ---- the agent's turn the message answers ------------------------------------------------
CONTEXT_CUES: dict[str, str] = {
    "prev_offer": r"(?:would\s+you\s+like|shall\s+i|should\s+i|do\s+you\s+want|want\s+me\s+to|"
                  r"let\s+me\s+know\s+if|which\s+(?:one|option)|or\s+would\s+you|prefer)[^.!]*\?\W*\S*\W*$",
    "prev_question": r"\?\W*\S*\W*$",
    "prev_interrupted": r"\bcancell?ed\b|request\s+interrupted|\binterrupted\s+by\s+user\b|"
                        r"tool\s+use\s+was\s+rejected|user\s+rejected",
    "prev_done": r"(?:✅|\bsuccessfully\b|\bis\s+now\b|\bnow\s+(?:works|uses|has|shows)\b|"
                 r"\bi'?ve\s+(?:updated|changed|added|fixed|created|removed)|\b(?:fixed|updated|"
                 r"implemented|created)\b)",
    "prev_plan": r"\b(?:let\s+me|let'?s|i'?ll|i\s+will|now\s+i'?ll|next,?\s+i)\b",
}

# Words that mark non-English text the English cues would misread ("no" in Spanish).
_STOP_EN = frozenset(
    "the a an and or but to of in on for with is are was it this that you i we be do not "
    "can should my me your it's don't use make add please just so if then as at by from "
    "what how why there here have has all".split())
_STOP_OTHER = frozenset(
    # es, pt, fr, it, de, nl, pl, cs, da — frequent words that are not English words
    "el la los las que es por para una uno con del pero esto esta eso como muy también "
    "não uma com isso está são mais você ele ela para le les des est une pas pour avec "
    "sur dans mais c'est il elle ce cette qui sont nous vous gli della che non sono questo "
    "der die das und ist nicht ein eine mit auf für ich sie wir zu den dem het een niet "
    "van ik je zijn dat nie jest się na że jak ale czy jest ten tak co je není jsem to "
    "ale se na že jak og ikke det er en til på af med jeg".split())
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?", re.UNICODE)


def english_ratio(text: str) -> float:
    """Share of the text's known function words that are English (1.0 when it has none)."""
    words = [w.lower() for w in _WORD.findall(text[:2000])]
    if not words:
        return 1.0
    latin = sum(1 for w in words if w.isascii())
    if latin / len(words) < 0.5:  # Cyrillic, CJK, Greek … scripts
        return 0.0
    en = sum(1 for w in words if w in _STOP_EN)
    other = sum(1 for w in words if w in _STOP_OTHER and w not in _STOP_EN)
    return 1.0 if en + other == 0 else en / (en + other)


def looks_like_log_or_code(text: str) -> bool:
    """Pasted terminal output, stack traces or code rather than words typed to the agent."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return False
    first = lines[0].strip()
    if re.match(r"^(?:Traceback \(most recent|Error:|\w+Error\b|FAIL\b|npm ERR!|\s*at\s+\S+\s+\(|"
                r"\$ |>>> |\[\d{2}:\d{2}|\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2})", first):
        return True
    if len(lines) < 4:
        return False
    codey = sum(1 for ln in lines if re.search(r"[{};=<>()\[\]]\s*$|^\s*(?:at |File \"|\||#|//|"
                                              r"import |def |class |function |const |let |var )", ln))
    return codey / len(lines) > 0.5


def _compile(cues: dict[str, str]) -> list[tuple[str, re.Pattern[str]]]:
    # The text is lower-cased once instead of matching case-insensitively (much faster);
    # only must_caps reads the original case.
    return [(name, re.compile(p, re.MULTILINE)) for name, p in cues.items()]


_MESSAGE = _compile(MESSAGE_CUES)
_CONTEXT = _compile(CONTEXT_CUES)

MAX_CHARS = 4000  # messages are cut to this before the cues run: a pasted novel costs nothing


def clean(text: str) -> str:
    t = text[:MAX_CHARS].replace("\u2019", "'").replace("\u2018", "'")
    t = t.replace("\u201c", '"').replace("\u201d", '"')
    t = re.sub(r"```.*?(?:```|$)", " [code] ", t, flags=re.DOTALL)  # fenced blocks say nothing
    return t.strip()


def cues(message: str, previous: str | None = None) -> dict[str, float]:
    """The named cues of one message in the context of the agent turn it answers."""
    t = clean(message)
    low = t.lower()
    out: dict[str, float] = {}
    for name, rx in _MESSAGE:
        if rx.search(t if name == "must_caps" else low):
            out[name] = 1.0
    prev = clean(previous or "")[-600:].lower()
    if prev:
        for name, rx in _CONTEXT:
            if rx.search(prev):
                out[name] = 1.0
    else:
        out["no_previous"] = 1.0
    words = len(t.split())
    out["short"] = 1.0 if words <= 6 else 0.0
    out["long"] = 1.0 if words >= 60 else 0.0
    # Interactions the linear model cannot form on its own
    if "opens_no" in out and "prev_offer" in out and words <= 4:
        out["declines_offer"] = 1.0
    if "opens_no" in out and "failure_report" in out:
        out["no_then_symptom"] = 1.0
    rejecting = {"opens_no", "not_right", "you_did"} & set(out)
    if ("instead" in out or "rather" in out) and "request" in out and not rejecting:
        out["instead_in_request"] = 1.0
    if "opens_actually" in out and ("approval" in out or "agrees" in out) and "not_right" not in out:
        out["actually_agrees"] = 1.0
    if ("dont_do" in out or "always_never" in out) and "from_now_on" in out:
        out["standing_rule"] = 1.0
    if "prev_interrupted" in out and ({"opens_no", "dont_do", "instead", "no_need", "should_be"}
                                      & set(out)):
        out["redirect_after_interrupt"] = 1.0
    return {k: v for k, v in out.items() if v}


# ---- pasted text ------------------------------------------------------------------------
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+\S", re.MULTILINE)
_LIST_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+\S", re.MULTILINE)
_QUOTE = re.compile(r"^\s*>", re.MULTILINE)
_PROMPT_OPENING = re.compile(
    r"^\W*(?:you\s+are\s+(?:an?|the)\s+|act\s+as\s+|your\s+(?:role|task)\s+is\b|rules?\s*:|"
    r"role\s*:|system\s+prompt\b|instructions?\s*:)", re.IGNORECASE)
OWN_WORDS = 300  # a short note the user wrote around a paste is weighed on its own


def _structured(block: str) -> bool:
    """Reads as a document, a configuration, a rule list or a prompt for another tool."""
    lines = [ln for ln in block.splitlines() if ln.strip()]
    if not lines:
        return False
    headings = len(_HEADING.findall(block))
    items = len(_LIST_ITEM.findall(block))
    quoted = len(_QUOTE.findall(block))
    fences = block.count("```")
    document = (headings >= 2 or (headings and items >= 3) or fences >= 2
                or quoted >= 3 and quoted * 2 >= len(lines)
                or bool(_PROMPT_OPENING.match(block)) and len(lines) >= 4)
    if document:
        return len(block) >= 500 or len(lines) >= 12
    # A plain list may be the user's own (suggestions, steps): only a long one reads as pasted.
    return items >= 6 and len(block) >= 1500


def pasted(text: str) -> tuple[bool, str]:
    """Whether the message is mostly text the user pasted (a document, configuration, rule
    list written for another tool, prompt for another agent, log) rather than words to the
    agent; and, if so, the short part the user wrote around it ('' when there is none)."""
    if len(text) < 500 and text.count("\n") < 11:
        return False, text
    if not _structured(text) and not looks_like_log_or_code(text):
        return False, text
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    own: list[str] = []
    for part in (paragraphs[:1], paragraphs[-1:]) if len(paragraphs) > 1 else ():
        p = part[0]
        if (len(p) <= OWN_WORDS and not _HEADING.match(p) and not _LIST_ITEM.match(p)
                and "```" not in p and not _QUOTE.match(p) and p not in own):
            own.append(p)
    return True, "\n".join(own)


# ---- generic features of the words and of the exchange --------------------------------------
_TOKEN = re.compile(r"[a-z]+(?:'[a-z]+)?|[?!]|\[code\]")
BUCKETS = 1 << 11
_NEGATION = frozenset("no nope nah not don't dont never didn't doesn't isn't wasn't won't "
                      "shouldn't can't stop wrong".split())
_CONTRAST = frozenset("but instead rather actually however though although yet".split())
_IMPERATIVE = frozenset(
    "use add remove delete make put move change fix revert undo keep stop don't dont never "
    "always do run write rename replace update go switch try check show let's lets please "
    "set create drop avoid follow read look".split())
_PAST_AFTER_YOU = re.compile(r"\byou(?:'ve|\s+have|\s+just|\s+also|\s+still)?\s+(?:\w+ed|did|"
                             r"didn't|made|put|wrote|broke|forgot|left|took|set|got|gave)\b")
_CONTENT = re.compile(r"[a-z_][a-z0-9_.-]{3,}")
_STOPWORDS = frozenset("this that with from have will would should could there their them "
                       "they then than what when where which while your into about just also "
                       "like want need make sure some more only here it's don't can't".split())


# The agent turn: it asked the user something, announced what it will do, claimed it is done.
_PREV_ASKS = re.compile(CONTEXT_CUES["prev_question"])
_PREV_PLANS = re.compile(CONTEXT_CUES["prev_plan"])
_PREV_DONE = re.compile(CONTEXT_CUES["prev_done"])


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def hashed(text: str) -> list[int]:
    """Bucket indices of the message's words, word pairs and opening (no vocabulary ships)."""
    toks = tokens(text)[:120]
    grams = [*toks, *(a + " " + b for a, b in zip(toks, toks[1:], strict=False))]
    grams += ["^" + " ".join(toks[:1]), "^^" + " ".join(toks[:2])]
    return sorted({zlib.crc32(g.encode()) % BUCKETS for g in grams})


def generic(text: str, previous: str | None) -> dict[str, float]:
    """Author-independent shapes: negation or contrast near the start, imperative mood,
    "you" + past tense, length; the agent turn it answers: asked, announced a plan, claimed
    done (with a negation opening the answer), and how many of its words the message repeats."""
    toks = tokens(text)
    head = toks[:4]
    out: dict[str, float] = {}
    if _NEGATION & set(head):
        out["g_negation_start"] = 1.0
    if _NEGATION & set(toks):
        out["g_negation"] = 1.0
    if _CONTRAST & set(toks):
        out["g_contrast"] = 1.0
    if head and head[0] in _IMPERATIVE:
        out["g_imperative"] = 1.0
    if _PAST_AFTER_YOU.search(text.lower()):
        out["g_you_past"] = 1.0
    if toks and toks[-1] == "?":
        out["g_question"] = 1.0
    n = len(toks)
    out["g_words"] = min(math.log1p(n) / 5.0, 1.5)
    if previous:
        prev = previous.lower()
        mine = set(_CONTENT.findall(text.lower())) - _STOPWORDS
        theirs = set(_CONTENT.findall(prev)) - _STOPWORDS
        if mine:
            out["g_overlap"] = len(mine & theirs) / len(mine)
        tail = prev[-600:]
        if _PREV_ASKS.search(tail):
            out["g_prev_asks"] = 1.0
        if _PREV_PLANS.search(tail):
            out["g_prev_plans"] = 1.0
        if "g_negation_start" in out and _PREV_DONE.search(tail):
            out["g_no_after_done"] = 1.0
    return out
