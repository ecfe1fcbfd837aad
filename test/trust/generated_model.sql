-- generated_model(trees, leaves): the text of a LightGBM model of complete
-- trees of leaves leaves (a power of two) over four features a to d, for
-- the attack tests (test/trust) and make soak.  Created in the first schema
-- of the search_path.
CREATE FUNCTION generated_model(trees int, leaves int) RETURNS text LANGUAGE sql AS $$
SELECT E'tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n' ||
       E'max_feature_idx=3\nobjective=regression\nfeature_names=a b c d\n' ||
       E'feature_infos=[-1:1] [-1:1] [-1:1] [-1:1]\n\n' ||
       string_agg(format(E'Tree=%s\nnum_leaves=%s\nnum_cat=0\nsplit_feature=%s\nsplit_gain=%s\n' ||
                         E'threshold=%s\ndecision_type=%s\nleft_child=%s\nright_child=%s\n' ||
                         E'leaf_value=%s\nshrinkage=1\n\n',
                         t, leaves,
                         (SELECT string_agg(((t + s) % 4)::text, ' ') FROM generate_series(0, leaves - 2) s),
                         (SELECT string_agg('1', ' ') FROM generate_series(0, leaves - 2) s),
                         (SELECT string_agg(round(((t * 7 + s * 3) % 17) / 17.0 - 0.5, 4)::text, ' ')
                            FROM generate_series(0, leaves - 2) s),
                         (SELECT string_agg('2', ' ') FROM generate_series(0, leaves - 2) s),
                         (SELECT string_agg(CASE WHEN 2 * s + 1 < leaves - 1 THEN 2 * s + 1
                                                 ELSE -(2 * s + 1 - (leaves - 1)) - 1 END::text, ' ')
                            FROM generate_series(0, leaves - 2) s),
                         (SELECT string_agg(CASE WHEN 2 * s + 2 < leaves - 1 THEN 2 * s + 2
                                                 ELSE -(2 * s + 2 - (leaves - 1)) - 1 END::text, ' ')
                            FROM generate_series(0, leaves - 2) s),
                         (SELECT string_agg((((t + l) % 9) * 0.125 - 0.5)::text, ' ')
                            FROM generate_series(0, leaves - 1) l)), '' ORDER BY t) ||
       E'end of trees\n'
  FROM generate_series(0, trees - 1) AS t
$$;
