-- Splits: do each source's episodes fall into the splits as configured? A split takes whole groups (DESIGN §4), so one big
-- group (units linked by a shared person: a rater of many conversations, one actor across decision sessions) lands whole in
-- one split and moves the source's shares away from the configured ratios. Per source and split: episodes, their share of
-- the source's episodes, groups, and the source's largest group (its id, episodes, share of the source, split).
WITH per_group AS (
    SELECT e.source, e.group_id, coalesce(s.split, '(unassigned)') AS split, count(*) AS episodes
    FROM episodes e
    LEFT JOIN splits s USING (group_id)
    GROUP BY ALL
),
per_source AS (
    SELECT source, sum(episodes) AS source_episodes FROM per_group GROUP BY source
),
largest AS (
    SELECT source, group_id AS largest_group, episodes AS largest_group_episodes, split AS largest_group_split
    FROM per_group
    QUALIFY row_number() OVER (PARTITION BY source ORDER BY episodes DESC, group_id) = 1
)
SELECT g.source,
       g.split,
       CAST(sum(g.episodes) AS BIGINT) AS episodes,
       round(sum(g.episodes) / any_value(t.source_episodes), 4) AS share,
       CAST(count(*) AS BIGINT) AS groups,
       any_value(l.largest_group) AS largest_group,
       CAST(any_value(l.largest_group_episodes) AS BIGINT) AS largest_group_episodes,
       round(any_value(l.largest_group_episodes) / any_value(t.source_episodes), 4) AS largest_group_share,
       any_value(l.largest_group_split) AS largest_group_split
FROM per_group g
JOIN per_source t USING (source)
JOIN largest l USING (source)
GROUP BY g.source, g.split
ORDER BY g.source, g.split
