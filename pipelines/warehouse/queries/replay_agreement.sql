-- Decisions replayed with another persona (`turnlake decision replay`, results under <raw root>/replays/):
-- per persona and domain, how many decisions were replayed, how many times the persona chose the action the
-- original actor chose (trimmed, without case), and the agreement rate.
SELECT persona,
       domain,
       count(*) AS replayed,
       count(*) FILTER (WHERE agrees) AS agreeing,
       count(*) FILTER (WHERE agrees) / count(*) AS agreement_rate
FROM replays
GROUP BY ALL
ORDER BY persona, domain NULLS LAST
