/** A node of `EXPLAIN (FORMAT JSON)` output, its children under `Plans`. */
export type PlanNode = Record<string, unknown> & { Plans?: PlanNode[] };

/** Every node of the plan tree under (and including) `node` that `match` accepts, depth first. */
export function findPlanNodes(node: PlanNode, match: (node: PlanNode) => boolean, found: PlanNode[] = []): PlanNode[] {
  if (match(node)) found.push(node);
  for (const child of node.Plans ?? []) findPlanNodes(child, match, found);
  return found;
}
