import { budgetStoreContract } from "./budget-store-contract";
import { MemoryBudgetStore } from "./memory-budget-store";

// One process holds one store (the embedded default): the race runs on the one instance.
budgetStoreContract("in-memory", async () => new MemoryBudgetStore());
