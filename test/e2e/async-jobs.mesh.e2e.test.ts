import { asyncJobsSuite } from "./async-jobs-suite";

asyncJobsSuite("the mesh");
