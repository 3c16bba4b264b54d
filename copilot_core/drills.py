"""Troubleshooting drills: the port to a lab, the scorer, the use case, the results store.

A drill hands a student's lab over with one known fault of the catalog
(:mod:`copilot_core.faults`) in it, tutors without naming the answer, grades the fix and
restores the lab exactly; ``eval --suite faults`` scores a model's diagnosis on the same
faults with the same scorer. This module is the public face of the private modules that
do it:

* the port a tool source implements, :class:`DrillLab` (fit, checkpoint, apply, judge,
  restore), and its values :class:`LabFit`, :class:`DrillCheckpoint`,
  :class:`ConstraintResult`, :class:`RestoreReport`, :class:`DrillStepError`;
* the scorer, pure: :func:`score_diagnosis` (a :class:`Diagnosis` of :class:`Cause` s
  against a :class:`~copilot_core.faults.GroundTruth`: root-cause F1 as NIKA scores it,
  localisation as NetOpsBench does, a :class:`DiagnosisScore`) and :func:`grade_fix` (a
  student's fix per :class:`Condition`, a :class:`Grade` with partial credit);
* the use case, :class:`Drills` (start, hint, grade, end), what it is asked
  (:class:`DrillCaller`, :class:`DrillChoice`) and answers: :class:`DrillView` (what the
  student sees: never the answer), and at the end a :class:`DrillEnding` with the
  :class:`DrillAnswer`;
* the store port :class:`DrillResults` (the active drill of each project,
  :class:`ActiveDrill`; each user's finished drills, :class:`DrillOutcome`) and
  :class:`InMemoryDrillResults`.

The errors are in :mod:`copilot_core.errors`: ``DrillActiveError``,
``LabDoesNotFitError``, ``DrillNotStartedError``, ``DrillNotFoundError``,
``DrillStepError``. ``docs/faults.md`` (Drills) tells the story.
"""

from __future__ import annotations

from copilot_core._drill_ports import (
    ConstraintResult,
    DrillCheckpoint,
    DrillLab,
    LabFit,
    RestoreReport,
)
from copilot_core._drill_score import (
    Cause,
    Condition,
    Diagnosis,
    DiagnosisScore,
    Grade,
    grade_fix,
    score_diagnosis,
)
from copilot_core._drill_store import (
    ACTIVE_COLUMNS,
    RESULT_COLUMNS,
    ActiveDrill,
    DrillOutcome,
    DrillResults,
    DrillRows,
    InMemoryDrillResults,
)
from copilot_core._drills import (
    DRILL_MODE,
    DrillAnswer,
    DrillCaller,
    DrillChoice,
    DrillEnding,
    Drills,
    DrillView,
)
from copilot_core.errors import DrillStepError

__all__ = [
    "ACTIVE_COLUMNS",
    "DRILL_MODE",
    "RESULT_COLUMNS",
    "ActiveDrill",
    "Cause",
    "Condition",
    "ConstraintResult",
    "Diagnosis",
    "DiagnosisScore",
    "DrillAnswer",
    "DrillCaller",
    "DrillCheckpoint",
    "DrillChoice",
    "DrillEnding",
    "DrillLab",
    "DrillOutcome",
    "DrillResults",
    "DrillRows",
    "DrillStepError",
    "DrillView",
    "Drills",
    "Grade",
    "InMemoryDrillResults",
    "LabFit",
    "RestoreReport",
    "grade_fix",
    "score_diagnosis",
]
