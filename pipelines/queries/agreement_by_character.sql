-- Study: sessions, agreement / refusal / max-turns rates and mean return by character.
SELECT e.attributes->>'$.character' AS character,
       count(*) AS sessions,
       round(avg(CASE WHEN e.end_reason = 'agreement' THEN 1.0 ELSE 0.0 END), 3) AS agreement_rate,
       round(avg(CASE WHEN e.end_reason = 'refusal' THEN 1.0 ELSE 0.0 END), 3) AS refusal_rate,
       round(avg(CASE WHEN e.end_reason = 'max_turns' THEN 1.0 ELSE 0.0 END), 3) AS max_turns_rate,
       round(avg(o."return"), 3) AS mean_return
FROM episodes e
JOIN episode_outcomes o USING (episode_id)
WHERE e.source = 'study'
GROUP BY ALL
ORDER BY sessions DESC, character
