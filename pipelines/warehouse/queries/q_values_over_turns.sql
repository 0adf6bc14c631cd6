-- Study: how Q-values evolve as the conversation progresses: per IQL step (every step of every session, the last one
-- included), the selected policy's Q-value, the best alternative's, the margin, and how often the selected policy was
-- not the argmax.
WITH steps AS (
    SELECT CAST(d.attributes->>'$.step' AS INTEGER) AS step,
           struct_extract(list_filter(d.candidates, lambda c: c.action = d.action)[1], 'value') AS q_selected,
           list_max(list_transform(list_filter(d.candidates, lambda c: c.action <> d.action), lambda c: c.value)) AS q_best_alternative
    FROM decisions d
    JOIN episodes e USING (episode_id)
    WHERE e.source = 'study' AND len(d.candidates) > 0
)
SELECT step,
       count(*) AS steps,
       round(avg(q_selected), 4) AS mean_q_selected,
       round(avg(q_best_alternative), 4) AS mean_q_best_alternative,
       round(avg(q_selected - q_best_alternative), 4) AS mean_q_margin,
       round(avg(CASE WHEN q_selected < q_best_alternative THEN 1.0
                      WHEN q_selected IS NOT NULL AND q_best_alternative IS NOT NULL THEN 0.0 END), 3) AS share_not_argmax
FROM steps
GROUP BY ALL
ORDER BY step
