/** A tag of a project's registry, as its record in player_tags and its copy in the tag list say. */
export interface RegisteredTag {
  id: number;
  tag: string;
  label: string;
  category: string | null;
  description: string | null;
  isHidden: boolean;
  firstSeenAt: Date;
  lastSeenAt: Date;
}
