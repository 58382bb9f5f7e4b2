"""Words that name a job, so "I'm a X" can be read as an occupation.

`JOBS` lists the common ones. Beyond it, an agent noun whose ending names
a trade or a profession is a job too ("locksmith", "wheelwright",
"cartographer", "sommelier", "electrician", "entrepreneur"). The endings
-er and -ist are left out on purpose: as often as a job they name a habit
or a trait ("a runner", "a heavy smoker", "a perfectionist"), and an
occupation slot filled by a habit would be replaced by the next real job.
"""

from __future__ import annotations

JOBS = (
    r"engineer|developer|programmer|designer|manager|scientist|analyst|nurse|doctor|"
    r"teacher|professor|lawyer|accountant|architect|researcher|consultant|writer|"
    r"student|intern|chef|pharmacist|dentist|barista|librarian|journalist|editor|"
    r"electrician|plumber|firefighter|pilot|photographer|musician|artist|founder|cto|ceo|"
    r"sre|devops|lead|administrator|admin|technician|therapist|veterinarian|vet|translator|"
    # trades, care, service and the professions: "I'm a paramedic" is a job, like
    # "engineer"; not words as often a trait ("a good cook", "a careful driver")
    r"paramedic|midwife|surgeon|physician|physiotherapist|psychologist|psychiatrist|"
    r"optometrist|radiographer|dietitian|nutritionist|caregiver|carer|nanny|counsell?or|"
    r"social worker|carpenter|mechanic|welder|roofer|tailor|farmer|baker|butcher|waiter|"
    r"waitress|bartender|hairdresser|barber|cashier|clerk|secretary|receptionist|cleaner|"
    r"janitor|courier|postman|soldier|police officer|detective|paralegal|solicitor|"
    r"barrister|attorney|banker|broker|auditor|actuary|economist|statistician|"
    r"mathematician|physicist|chemist|biologist|geologist|recruiter|salesperson|realtor|"
    r"estate agent|tutor|lecturer|instructor|copywriter|illustrator|animator|sysadmin|"
    r"entrepreneur|freelancer|contractor|machinist|dispatcher|coordinator|hydrologist|"
    r"scheduler|planner|supervisor|foreman|operator|inspector|surveyor|underwriter"
)
# trade and profession endings, on a word of at least two letters before them
JOB_SUFFIXED = r"[a-z]{2,}(?:smith|wright|grapher|ologist|ician|ier|preneur|teur)"
# a job word: listed, or by its ending
JOB = rf"(?:{JOBS}|{JOB_SUFFIXED})"
