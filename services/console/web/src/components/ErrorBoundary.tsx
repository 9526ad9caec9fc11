import { Component, type ErrorInfo, type ReactNode } from "react";

/**
 * Catches a page that failed to render, most often a page's chunk that no longer exists because
 * the console was deployed anew while this tab was open: reloading fetches the new one.
 */
export class ErrorBoundary extends Component<{ children: ReactNode; resetKey?: string }, { error: Error | null }> {
  override state: { error: Error | null } = { error: null };

  static getDerivedStateFromError(error: Error) {
    return { error };
  }

  override componentDidUpdate(prev: { resetKey?: string }) {
    if (prev.resetKey !== this.props.resetKey && this.state.error) this.setState({ error: null });
  }

  override componentDidCatch(error: Error, info: ErrorInfo) {
    console.error("console page failed", error, info.componentStack);
  }

  override render() {
    const { error } = this.state;
    if (!error) return this.props.children;
    const stale = /dynamically imported module|Importing a module script failed|error loading dynamically imported/i.test(error.message);
    return (
      <div className="alert alert-error" role="alert">
        <p>
          <strong>{stale ? "The console has been updated." : "This page failed to load."}</strong> {stale ? "Reload to get the new version." : error.message}
        </p>
        <button type="button" className="btn btn-small" onClick={() => window.location.reload()}>
          Reload
        </button>
      </div>
    );
  }
}
