import { Link } from "react-router";
import { usePageTitle } from "../workspace";

export function NotFound() {
  usePageTitle("Not found");
  return (
    <section className="page">
      <h1>Page not found</h1>
      <p>
        There is nothing at this address. <Link to="/">Go to the console's start</Link>.
      </p>
    </section>
  );
}
