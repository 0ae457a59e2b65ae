/**
 * Following the conversation: the view stays at the newest content unless the user scrolled away from
 * it, and comes back to following when the user returns to the bottom. Any scroll that is not the
 * view's own (wheel, touch, keys, the scroll bar, moving focus up, "Show card") decides; content that
 * grows after it was laid out (cards rendered late, a terminal filling up) never does: the page does
 * not anchor its scroll position to content (`overflow-anchor: none`), and a ResizeObserver keeps the
 * bottom in view while following.
 *
 * Also WCAG 2.4.11 (focus not obscured): the sticky header and footer cover the top and bottom of the
 * page, so an element that gets focus under either is scrolled into the visible band between them.
 */
export interface Band {
  /** The viewport's visible band between the sticky header and the sticky footer. */
  top(): number;
  bottom(): number;
}

const USER_INTENT_MS = 800;
const AT_BOTTOM_PX = 24;

export class TailFollower {
  following = true;
  private userAt = 0;
  private programmaticUntil = 0;

  constructor(
    private readonly scroller: HTMLElement,
    private readonly timeline: HTMLElement,
    private readonly band: Band,
    private readonly onChange: (following: boolean) => void,
  ) {
    const intent = () => (this.userAt = performance.now());
    window.addEventListener("wheel", intent, { passive: true });
    window.addEventListener("touchmove", intent, { passive: true });
    window.addEventListener("pointerdown", (e) => {
      // The scroll bar: a press on the document outside any element's box.
      if (e.target === document.documentElement || e.target === document.body) intent();
    });
    window.addEventListener("keydown", (e) => {
      const t = e.target as HTMLElement | null;
      if (t?.closest("textarea, input, select")) return;
      if (["PageUp", "PageDown", "ArrowUp", "ArrowDown", "Home", "End", " "].includes(e.key)) intent();
    });
    window.addEventListener("scroll", () => this.onScroll(), { passive: true });
    new ResizeObserver(() => {
      if (this.following) this.toBottom();
    }).observe(timeline);
    document.addEventListener("focusin", (e) => this.onFocus(e.target as HTMLElement));
  }

  atBottom(): boolean {
    const s = this.scroller;
    return s.scrollTop + s.clientHeight >= s.scrollHeight - AT_BOTTOM_PX;
  }

  toBottom(): void {
    this.programmaticUntil = performance.now() + 100;
    this.scroller.scrollTop = this.scroller.scrollHeight;
  }

  /** The user asked to follow again (the "jump to newest" button). */
  follow(): void {
    this.set(true);
    this.toBottom();
  }

  /** After a render: keep the newest content in view while following. */
  afterRender(): void {
    if (this.following) this.toBottom();
  }

  /** Scroll `el` into the visible band if the header or footer covers it (or it is outside the viewport). */
  reveal(el: Element): void {
    const r = el.getBoundingClientRect();
    const top = this.band.top();
    const bottom = this.band.bottom();
    let delta = 0;
    if (r.bottom > bottom) delta = r.bottom - bottom + 8;
    if (r.top - delta < top) delta = r.top - top - 8; // tall element: its top wins
    if (delta !== 0) {
      this.programmaticUntil = performance.now() + 100;
      this.scroller.scrollTop += delta;
    }
  }

  /**
   * A scroll that is not ours (the user, a "Show card", find in page) decides: at the bottom, follow;
   * elsewhere, stay. Content growing does not scroll the page (`overflow-anchor: none`): the
   * ResizeObserver brings the bottom back into view while following.
   */
  private onScroll(): void {
    if (performance.now() < this.programmaticUntil && performance.now() - this.userAt > USER_INTENT_MS) return;
    this.set(this.atBottom());
  }

  private onFocus(el: HTMLElement): void {
    if (!this.timeline.contains(el)) return;
    // Focus moved into the conversation: following resumes only at its newest item.
    const last = this.timeline.lastElementChild;
    this.set(!!last && last.contains(el));
    this.reveal(el);
  }

  private set(following: boolean): void {
    if (following === this.following) return;
    this.following = following;
    this.onChange(following);
  }
}
