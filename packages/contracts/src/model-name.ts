import { z } from "zod";

/** Longer than any provider's model name; allow-list globs are matched against it on every request. */
export const MODEL_NAME_MAX_LENGTH = 256;

/** The `model` of every request body: an overlong name is a 400 naming `model`, before any lookup. */
export const ModelName = z.string().min(1).max(MODEL_NAME_MAX_LENGTH, `must be at most ${MODEL_NAME_MAX_LENGTH} characters`);
