-- Social RL: which policy adaptations were followed by higher engagement or alignment in the
-- next round, per role and cue, with counts.
-- An adaptation recorded in round r shapes the agent's policy for round r+1, so it is measured by
-- that agent's feedback in r+1 against r (no next round: counted, not measured). `cue` is the
-- documented cue, or for the deltas-only shape the rule's delta signs (see silver `decisions`).
WITH rounds AS (
    SELECT r.episode_id, r.agent_id, r.round_number, r.role, r.engagement,
           r.theoretical_alignment,
           json_extract_string(e.attributes, '$.run_dir') AS run_dir
    FROM agent_rounds r
    JOIN episodes e USING (episode_id)
),
adapted AS (
    SELECT coalesce(json_extract_string(d.attributes, '$.role'), now.role) AS role,
           coalesce(json_extract_string(d.attributes, '$.adaptation_type'), 'adapt_policy')
               AS adaptation_type,
           coalesce(json_extract_string(d.attributes, '$.cue'),
                    regexp_extract(d.action, '^adapt_policy:(.*)$', 1)) AS cue,
           nxt.episode_id AS next_episode_id,
           nxt.engagement - now.engagement AS engagement_change,
           nxt.theoretical_alignment - now.theoretical_alignment AS alignment_change
    FROM decisions d
    LEFT JOIN rounds now ON now.episode_id = d.episode_id AND now.agent_id = d.actor_id
    LEFT JOIN rounds nxt
           ON nxt.run_dir = now.run_dir AND nxt.agent_id = now.agent_id
          AND nxt.round_number = now.round_number + 1
    WHERE d.actor_type = 'coach'
)
SELECT role,
       adaptation_type,
       cue,
       count(*) AS adaptations,
       count(next_episode_id) AS measured,
       count(*) FILTER (WHERE engagement_change > 1e-9) AS engagement_higher,
       count(*) FILTER (WHERE alignment_change > 1e-9) AS alignment_higher,
       count(*) FILTER (WHERE engagement_change > 1e-9 OR alignment_change > 1e-9)
           AS either_higher,
       round(avg(engagement_change), 3) AS mean_engagement_change,
       round(avg(alignment_change), 3) AS mean_alignment_change
FROM adapted
GROUP BY ALL
ORDER BY role, adaptation_type, cue
