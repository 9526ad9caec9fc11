/**
 * Props for a box that scrolls sideways (a wide table on a phone): keyboard users can focus it to
 * scroll, and screen readers hear what it holds.
 */
export function scrollable(label: string): { tabIndex: 0; role: "group"; "aria-label": string } {
  return { tabIndex: 0, role: "group", "aria-label": label };
}
