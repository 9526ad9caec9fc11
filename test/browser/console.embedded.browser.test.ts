import { consoleBrowserSuite } from "./console-browser-suite";

consoleBrowserSuite("the embedded default");
