"""Online boundary features, one turn late, on a learned low-dim space.

`BoundaryFeatures.update(z, role, text)` reads turn t+1 (its embedding already
projected into the learned space) and returns the feature row of the candidate
cut before turn t, which it held back; `finish()` returns the row of the held
turn with the next-turn features set to their one-turn fallbacks. Nothing
reads past t+1. The features do not depend on the detector's own cuts, so the
same code computes the training tables (episodic/bench/segment_train.py) and runs in
the detector.
"""

from __future__ import annotations

import math
import re
from collections import deque
from typing import Any

import numpy as np

from episodic.segment.base import array_from_json, array_to_json, finite
from episodic.segment.nig import NigBocpd

SEMANTIC = (
    "d_prev", "d_prev2", "d_ema5", "d_ema3", "d_w2", "d_w4", "d_w8", "coh_prev", "raw_prev",
    "dp_w4", "dp_ema5", "d_next_prev", "s_next", "d_w4_z",
)  # fmt: skip
BOCPD = ("cp", "cp_delay", "cp_delay2", "sur", "sur_z", "erl", "sur_next")
LEXICAL = ("lex_new", "lex_jac", "lex_new_pair")
SURFACE = (
    "marker", "closing_prev", "q", "q_prev", "q_next", "user", "role_change", "len", "len_prev",
    "len_next", "has_next",
)  # fmt: skip
NAMES = SEMANTIC + BOCPD + LEXICAL + SURFACE
_WORD = re.compile(r"[a-z0-9']+")
STOP = frozenset(
    """a an the and or but if then so of to in on at by for with from as is are was were be been
being i me my we our you your he she it its they them their this that these those there here what
which who whom do does did doing have has had having not no yes can could would should will shall
may might must just also very too than about into over under up down out off again more most some
any all each both few other such own same only how when where why am im i'm it's that's don't
dont i'd i'll you're ok okay oh well really like get got go going know think want need one much
many lot things thing yeah sure hi hello""".split()
)
MARKER = re.compile(
    r"^\W*(?:anyway|anyways|by the way|btw|so,? (?:what|how|tell|do|did|are|have)"
    r"|let'?s talk about|another (?:question|thing)"
    r"|(?:a |one )?(?:different|other|new|unrelated) (?:question|topic|thing)"
    r"|one more (?:thing|question)|on (?:another|a different) note|changing the subject"
    r"|moving on|switching (?:gears|topics)|speaking of|also,|i also|can you also"
    r"|what about|how about|next,?)\b",
    re.I,
)
CLOSING = re.compile(
    r"\b(?:anything else|thank(?:s| you)|that'?s all|you'?re welcome|no problem"
    r"|have a (?:nice|good|great)|bye|goodbye|great,? thanks|perfect|glad to help"
    r"|is there anything)\b",
    re.I,
)
LEX_CHARS = 600  # lexical features read the head of a long turn only
TEXT_KEEP = 200  # the previous turn's text kept for the closing-phrase feature


def _ref_weights() -> tuple[np.ndarray, ...]:
    """For each history length nh (1..8), the (8, 10) weights that turn the state
    [last 8 vectors newest first; ema3; ema5] into the 8 reference vectors: the
    previous turn, the one before, ema5, ema3, the means of the last 2/4/8 turns
    (of as many as there are) and of the 3 before the previous (or the previous)."""
    out = []
    for nh in range(1, 9):
        w = np.zeros((8, 10))
        w[0, 0] = 1.0
        w[1, min(1, nh - 1)] = 1.0
        w[2, 9] = 1.0
        w[3, 8] = 1.0
        for row, k in ((4, 2), (5, 4), (6, 8)):
            m = min(k, nh)
            w[row, :m] = 1.0 / m
        if nh > 1:
            m = min(4, nh) - 1
            w[7, 1 : 1 + m] = 1.0 / m
        else:
            w[7, 0] = 1.0
        w.flags.writeable = False
        out.append(w)
    return tuple(out)


REF_WEIGHTS = _ref_weights()


def words(text: str) -> frozenset[str]:
    low = text[:LEX_CHARS].lower()
    return frozenset(w for w in _WORD.findall(low) if len(w) > 2 and w not in STOP)


class _Held:
    """The turn whose cut is pending: what its row needs once the next turn arrives."""

    __slots__ = ("z", "role", "text", "words", "cp", "sur", "erl", "q", "len", "seq")
    z: np.ndarray
    role: str
    text: str
    words: frozenset[str]
    cp: float
    sur: float
    erl: float
    q: float
    len: float
    seq: int

    def state(self) -> dict[str, Any]:
        return {
            "z": array_to_json(self.z),
            "role": self.role,
            "text": self.text,
            "cp": self.cp,
            "sur": self.sur,
            "erl": self.erl,
            "seq": self.seq,
        }

    @classmethod
    def load(cls, st: dict[str, Any]) -> _Held:
        h = cls()
        h.z = array_from_json(st["z"])
        h.role, h.text, h.seq = str(st["role"]), str(st["text"]), int(st["seq"])
        h.cp, h.sur, h.erl = finite(st["cp"]), finite(st["sur"]), finite(st["erl"])
        h.words = words(h.text)
        h.q = 1.0 if "?" in h.text else 0.0
        h.len = math.log1p(len(h.text.split()))
        return h


class BoundaryFeatures:
    """Every feature of every candidate cut, from the stream so far plus one turn."""

    def __init__(
        self,
        dims: int,
        boc_scale: np.ndarray,
        n0: float = 10.0,
        hazard_lambda: float = 5.0,
        max_run: int = 30,
        kappa0: float = 1.0,
        alpha0: float = 2.0,
        beta0: float = 0.65,
        bocpd: bool = True,
        lexical: bool = True,
        pair_ema5_only: bool = False,
    ) -> None:
        """`bocpd=False` / `lexical=False`: a model that reads none of those features
        skips their work (the run-length recursion, the word sets); they read 0.
        `pair_ema5_only`: a model that reads `dp_ema5` alone (the shipped one) gets
        rows of that one feature, computed as the full row computes it."""
        scale = np.asarray(boc_scale, dtype=np.float64).ravel()
        if dims < 1 or not 1 <= scale.size <= dims or not (scale > 0).all():
            raise ValueError("need dims >= 1 and 1..dims positive BOCPD scales")
        if not n0 >= 0:
            raise ValueError("n0 must be >= 0")
        self.dims, self.n0 = dims, n0
        self.boc_scale = scale
        self.boc_dims = scale.size
        self._inv_boc = 1.0 / scale
        self.hazard_lambda, self.max_run = hazard_lambda, max_run
        self.kappa0, self.alpha0, self.beta0 = kappa0, alpha0, beta0
        self._boc = NigBocpd(self.boc_dims, max_run, hazard_lambda, kappa0, alpha0, beta0)
        self.bocpd, self.lexical = bocpd, lexical
        self.pair_ema5_only = pair_ema5_only and not bocpd and not lexical
        self._reset()

    def _reset(self) -> None:
        d = self.dims
        self._boc._reset()
        # one buffer: the last 8 vectors before the held turn (newest first), ema3,
        # ema5, the stream sum, then two scratch rows (the turn and its next); the
        # pair-only row's Gram reads its four rows (ema5, sum, turn, next) in place
        buf = np.zeros((13, d))
        self._M = buf[:10]
        self._sum = buf[10]
        self._P = buf[9:13]
        self._Q = buf[11:13]
        self._nh = 0
        self._texts: deque[str] = deque(maxlen=4)  # their texts, for the lexical features
        self._words: deque[frozenset[str]] = deque(maxlen=4)
        self._n = 0
        self._d4 = [0.0, 0.0, 0.0]  # running mean, variance, count of d_w4
        self._sz = [0.0, 0.0, 0.0]  # the same for the surprisal
        self._held: _Held | None = None
        self._prev_role = ""
        self._prev_text = ""
        self.last_cp = 0.0
        self.last_log_evidence: float | None = None

    @property
    def held_seq(self) -> int | None:
        return None if self._held is None else self._held.seq

    # -- the stream ------------------------------------------------------------
    def update(
        self, z: np.ndarray, role: str, text: str, seq: int = 0, want: bool = True
    ) -> dict[str, float] | None:
        """Read the next turn; return the row of the turn held before it, if any.
        `want=False`: the caller has no use for that row; only the running
        statistics the later rows depend on are updated (same values after)."""
        boc = self._boc
        self._sum += z
        self._n += 1
        cur = _Held()
        cur.z, cur.role, cur.text, cur.seq = z, role, text[:LEX_CHARS], seq
        cur.words = words(text) if self.lexical else frozenset()
        if self.bocpd:
            boc.step(z[: self.boc_dims] * self._inv_boc)
            cur.cp = boc.cp if self._n > 1 else 0.0
            cur.sur = -boc.log_evidence / self.boc_dims
            cur.erl = math.log1p(boc.expected_run)
            # this turn's change point and log predictive, for the detector's record
            self.last_cp = cur.cp
            self.last_log_evidence = boc.log_evidence if self._n > 1 else None
        else:
            cur.cp = cur.sur = cur.erl = 0.0
        if not self.pair_ema5_only:
            cur.q = 1.0 if "?" in text else 0.0
            cur.len = math.log1p(len(text.split()))
        row = None
        if self._held is not None and not want:
            self._skip(self._held)
            self._absorb(self._held)
        elif self._held is not None:
            if self.bocpd:
                post = boc.posterior
                cpd = float(post[1]) if len(post) > 1 else 0.0
                cpd2 = float(post[:2].sum())
            else:
                cpd = cpd2 = 0.0
            row = self._row(self._held, cur, cpd, cpd2)
            self._absorb(self._held)
        self._held = cur
        return row

    def finish(self) -> dict[str, float] | None:
        """The held turn's row without a next turn (end of stream, or no usable next)."""
        if self._held is None:
            return None
        row = self._row(self._held, None, 0.0, 0.0)
        self._absorb(self._held)
        self._held = None
        return row

    def _absorb(self, h: _Held) -> None:
        z, M = h.z, self._M
        if self.pair_ema5_only:  # the one reference its row reads
            self._nh = min(self._nh + 1, 8)
            if self._nh == 1:
                M[9] = z
            else:
                ema = M[9]
                ema += z
                ema *= 0.5
            return
        M[1:8] = M[0:7]  # overlapping: numpy copies through a buffer
        M[0] = z
        self._nh = min(self._nh + 1, 8)
        self._words.append(h.words)
        self._texts.append(h.text)
        if self._nh == 1:
            M[8] = z
            M[9] = z
        else:
            M[9] = 0.5 * M[9] + 0.5 * z
            M[8] = 0.7 * M[8] + 0.3 * z
        self._prev_role, self._prev_text = h.role, h.text[-TEXT_KEEP:]

    def _skip(self, p: _Held) -> None:
        """What `_row` does to the running z-scores, without the row."""
        if self.pair_ema5_only:
            return  # no z-scored feature is read
        if self._nh:
            mu = self._sum / (self._n + self.n0)
            self._z_update(self._d4, self._d_w4(p.z, mu), 0.1)
        self._z_update(self._sz, p.sur, 0.05)

    def _d_w4(self, x: np.ndarray, mu: np.ndarray) -> float:
        """Centred cosine distance of x to the mean of the last 4 turns (the z-scored
        feature; `_row` reads the same value off its matrix, equal up to rounding)."""
        a = x - mu
        b = REF_WEIGHTS[self._nh - 1][5] @ self._M - mu
        den = (math.sqrt(float(a @ a)) + 1e-12) * (math.sqrt(float(b @ b)) + 1e-12)
        return 1.0 - float(a @ b) / den

    @staticmethod
    def _z_update(acc: list[float], v: float, floor: float) -> float:
        m, var, n = acc
        z = (v - m) / math.sqrt(var + 1e-4) if n >= 3 else 0.0
        a = max(floor, 1.0 / (n + 1.0))
        d = v - m
        acc[0] = m + a * d
        acc[1] = (1.0 - a) * (var + a * d * d)
        acc[2] = n + 1.0
        return z

    def _pair_ema5(self, p: _Held, nxt: _Held | None) -> dict[str, float]:
        """`_row`'s `dp_ema5` alone: the centred pair (the turn and the next) against
        the stream's ema5, cosine distance. Every inner product comes from one Gram
        product of (ema5, stream sum, turn, next), the centring expanded."""
        if not self._nh:
            return {"dp_ema5": 0.0}
        P = self._P
        P[2] = p.z
        P[3] = p.z if nxt is None else nxt.z
        (ee, es, pe, ne), (_, ss, ps, ns), (_, _, pp, pn), (_, _, _, nn) = P.dot(P.T).tolist()
        k = 1.0 / (self._n + self.n0)  # mu = sum * k
        kk = k * k * ss
        rr = ee - 2.0 * k * es + kk
        rn = math.sqrt(max(rr, 0.0)) + 1e-12
        ga = pe - k * (ps + es) + kk  # (turn - mu) . (ema5 - mu)
        qa = pp - 2.0 * k * ps + kk
        if nxt is None:
            return {"dp_ema5": 1.0 - ga / ((math.sqrt(max(qa, 0.0)) + 1e-12) * rn)}
        ab = pn - k * (ps + ns) + kk
        qb = nn - 2.0 * k * ns + kk
        gp = 0.5 * (ga + ne - k * (ns + es) + kk)
        npair = 0.5 * math.sqrt(max(qa + 2.0 * ab + qb, 0.0)) + 1e-12
        return {"dp_ema5": 1.0 - gp / (npair * rn)}

    def _row(
        self, p: _Held, nxt: _Held | None, cp_delay: float, cp_delay2: float
    ) -> dict[str, float]:
        if self.pair_ema5_only:
            return self._pair_ema5(p, nxt)
        f: dict[str, float] = {}
        nh = self._nh
        mu = self._sum / (self._n + self.n0)
        x = p.z
        if nh:
            refs = REF_WEIGHTS[nh - 1] @ self._M
            refs -= mu
            Q = self._Q
            Q[0] = x
            Q[1] = nxt.z if nxt is not None else x
            Q -= mu
            rn = np.sqrt(np.einsum("ij,ij->i", refs, refs)) + 1e-12
            qa, qb = float(Q[0] @ Q[0]), float(Q[1] @ Q[1])
            G = Q @ refs.T  # (2, 8): the turn and the next against every reference
            na = math.sqrt(qa) + 1e-12
            d = 1.0 - G[0] / (na * rn)
            f["d_prev"], f["d_prev2"], f["d_ema5"], f["d_ema3"] = d[0], d[1], d[2], d[3]
            f["d_w2"], f["d_w4"], f["d_w8"] = d[4], d[5], d[6]
            f["coh_prev"] = 1.0 - float(refs[0] @ refs[7]) / (rn[0] * rn[7]) if nh > 1 else 0.0
            h1 = self._M[0]
            den = math.sqrt(float(x @ x) * float(h1 @ h1))
            f["raw_prev"] = 1.0 - float(x @ h1) / den if den > 1e-12 else 0.0
            if nxt is not None:
                ab = float(Q[0] @ Q[1])
                nb = math.sqrt(qb) + 1e-12
                # the pair (t, t+1): its centred mean is the mean of the two centred rows
                gp = 0.5 * (G[0] + G[1])
                npair = 0.5 * math.sqrt(max(qa + 2.0 * ab + qb, 0.0)) + 1e-12
                f["dp_w4"] = 1.0 - float(gp[5]) / (npair * rn[5])
                f["dp_ema5"] = 1.0 - float(gp[2]) / (npair * rn[2])
                f["d_next_prev"] = 1.0 - float(G[1, 0]) / (nb * rn[0])
                f["s_next"] = 1.0 - ab / (na * nb)
            else:
                f["dp_w4"], f["dp_ema5"], f["d_next_prev"], f["s_next"] = d[5], d[2], d[0], 0.0
            f["d_w4_z"] = self._z_update(self._d4, f["d_w4"], 0.1)
        else:
            for k in SEMANTIC:
                f[k] = 0.0
            m, var, n = self._d4
            f["d_w4_z"] = (0.0 - m) / math.sqrt(var + 1e-4) if n >= 3 else 0.0
        has_next = nxt is not None
        f["cp"] = p.cp if nh else 0.0
        f["cp_delay"] = cp_delay if has_next else f["cp"]
        f["cp_delay2"] = cp_delay2 if has_next else f["cp"]
        f["sur"] = p.sur
        f["sur_z"] = self._z_update(self._sz, p.sur, 0.05)
        f["erl"] = p.erl
        f["sur_next"] = nxt.sur if nxt is not None else p.sur
        W = p.words
        hw: frozenset[str] = frozenset().union(*self._words) if self._words else frozenset()
        f["lex_new"] = len(W - hw) / len(W) if W else 0.5
        U = W | hw
        f["lex_jac"] = len(W & hw) / len(U) if U else 0.0
        if nxt is not None:
            W2 = W | nxt.words
            f["lex_new_pair"] = len(W2 - hw) / len(W2) if W2 else 0.5
        else:
            f["lex_new_pair"] = f["lex_new"]
        t = p.text
        f["marker"] = 1.0 if MARKER.search(t[:80]) else 0.0
        f["closing_prev"] = 1.0 if nh and CLOSING.search(self._prev_text) else 0.0
        f["q"] = p.q
        f["q_prev"] = 1.0 if "?" in self._prev_text else 0.0
        f["q_next"] = nxt.q if nxt is not None else 0.0
        f["user"] = 1.0 if p.role == "user" else 0.0
        f["role_change"] = 1.0 if nh and p.role != self._prev_role else 0.0
        f["len"] = p.len
        f["len_prev"] = math.log1p(len(self._prev_text.split()))
        f["len_next"] = nxt.len if nxt is not None else p.len
        f["has_next"] = 1.0 if has_next else 0.0
        return f

    # -- checkpoint ------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {
            "boc": self._boc.state(),
            "hist": array_to_json(self._M[:8]),  # newest first
            "nh": self._nh,
            "texts": list(self._texts),
            "sum": array_to_json(self._sum),
            "n": self._n,
            "ema5": array_to_json(self._M[9]),
            "ema3": array_to_json(self._M[8]),
            "d4": list(self._d4),
            "sz": list(self._sz),
            "held": None if self._held is None else self._held.state(),
            "prev_role": self._prev_role,
            "prev_text": self._prev_text,
        }

    def load_state(self, st: dict[str, Any]) -> None:
        self._reset()
        d = self.dims
        self._boc.load_state(st["boc"])
        hist = array_from_json(st["hist"], (8, d))
        self._nh, self._n = int(st["nh"]), int(st["n"])
        pos = int(st.get("pos", 0))  # version-1 feature states kept a ring
        if not (0 <= self._nh <= 8 and 0 <= pos < 8 and self._n >= 0):
            raise ValueError("feature history counters out of range")
        self._M[:8] = hist[[(pos - 1 - i) % 8 for i in range(8)]] if "pos" in st else hist
        self._texts = deque((str(t) for t in st["texts"]), maxlen=4)
        self._words = deque((words(t) for t in self._texts), maxlen=4)
        self._sum[:] = array_from_json(st["sum"], (d,))
        self._M[9] = array_from_json(st["ema5"], (d,))
        self._M[8] = array_from_json(st["ema3"], (d,))
        self._d4 = [finite(v) for v in st["d4"]]
        self._sz = [finite(v) for v in st["sz"]]
        self._held = None if st["held"] is None else _Held.load(st["held"])
        self._prev_role, self._prev_text = str(st["prev_role"]), str(st["prev_text"])
